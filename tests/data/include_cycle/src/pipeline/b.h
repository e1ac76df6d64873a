// A fixture for Layering.IncludeCycleIsFound.
#pragma once
#include "src/pipeline/a.h"
