# The one-way layering of bnn's libraries, checked on the sources' includes:
#
#   cmake -DBNN_ROOT=<tree> -P cmake/check_layering.cmake
#
# Every quoted include of a file in <tree>'s library folders must name a
# folder that folder may use (the table below, which src/CMakeLists.txt
# mirrors with its target_link_libraries). Fails, listing every offending
# include, otherwise. Run by ctest as Layering.IncludesPointOneWay.
if(NOT BNN_ROOT)
  message(FATAL_ERROR "check_layering: pass -DBNN_ROOT=<source tree>")
endif()

# folder -> the folders its files may include (besides its own).
set(allowed_samplers "")
set(allowed_models "")
# Exception: the image loaders' augmentation seeds use samplers' header-only
# SplitMix64 (samplers/splitmix64.h), not the samplers library.
set(allowed_data_loaders "samplers/splitmix64.h")
set(allowed_src/io "")
set(allowed_src/runtime "")
set(allowed_src/config "samplers;models;data_loaders")
set(allowed_src/distributed "samplers")
set(allowed_src/evaluation "src/io;src/runtime;models")
set(allowed_src/pipeline "src/config;src/distributed;src/evaluation;src/io;src/runtime;samplers;models;data_loaders")
set(allowed_src/experiments "src/config;src/io;src/pipeline;samplers;models;data_loaders")
set(allowed_src/cli
    "src/config;src/distributed;src/experiments;src/io;src/pipeline;src/runtime;samplers;models;data_loaders")
set(folders samplers models data_loaders src/io src/runtime src/config src/distributed src/evaluation src/pipeline
    src/experiments src/cli)

set(violations "")
foreach(folder ${folders})
  file(GLOB files "${BNN_ROOT}/${folder}/*.h" "${BNN_ROOT}/${folder}/*.cpp")
  foreach(file ${files})
    file(STRINGS "${file}" includes REGEX "^#include \"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      # Only the project's own folders are checked; other quoted includes pass.
      set(owner "")
      foreach(candidate ${folders})
        string(FIND "${header}" "${candidate}/" at)
        if(at EQUAL 0)
          set(owner "${candidate}")
        endif()
      endforeach()
      if(owner STREQUAL "" OR owner STREQUAL folder)
        continue()
      endif()
      set(ok FALSE)
      foreach(permitted ${allowed_${folder}})
        if(permitted STREQUAL owner OR permitted STREQUAL header)
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        file(RELATIVE_PATH relative "${BNN_ROOT}" "${file}")
        list(APPEND violations "${relative} includes ${header}: ${folder} may not use ${owner}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering: includes against the one-way order of the libraries:\n  ${text}")
endif()
message(STATUS "layering: every include points one way")
