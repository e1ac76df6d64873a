# Runs scripts/make_torchscript_models.py for the tests of model.name
# torchscript, in script mode:
#
#   cmake -DPYTHON=python3 -DSCRIPT=.../make_torchscript_models.py -DOUT_DIR=DIR -P make_torchscript_models.cmake
#
# Its output goes to OUT_DIR/make_models.log. A failure (a Python whose
# torch cannot script or save these modules) is a warning, not a failed
# build: only those tests need the modules, and they fail naming the log,
# while the rest of the build and its tests go on (a GPU machine lent for
# minutes must not lose them to one Python step). OUT_DIR/stamp is written
# on success only, so the build tries again until it succeeds.
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${OUT_DIR} RESULT_VARIABLE result OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
file(MAKE_DIRECTORY ${OUT_DIR})
file(WRITE ${OUT_DIR}/make_models.log "${output}")
if(result EQUAL 0)
  file(TOUCH ${OUT_DIR}/stamp)
else()
  message(WARNING "bnn: ${SCRIPT} failed (${result}): the tests of model.name torchscript will fail; "
                  "its output is in ${OUT_DIR}/make_models.log")
endif()
