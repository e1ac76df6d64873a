// A fixture for Layering.CheckFailsOnAnUpwardInclude: io may not use pipeline.
#pragma once
#include "src/pipeline/run.h"
