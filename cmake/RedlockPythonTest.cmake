# SPDX-License-Identifier: BSD-3-Clause
# rl_python_test(<name> <script> <timeout_s> <label>
#                [ARGS <arg>...] [ENVIRONMENT <VAR=value>...]
#                [WORKING_DIRECTORY <dir>] [COST <seconds>])
# Registers a CTest test that runs a Python 3 (stdlib only) test script:
# `python3 <script> <arg>...`. The timeout is scaled by RL_TIMEOUT_MULT
# (tests/CMakeLists.txt), exit code 77 means skipped (the scripts print
# "SKIP: ..." when redis-server is missing), and the environment always
# has PYTHONDONTWRITEBYTECODE=1, plus ENVIRONMENT. COST: about how long
# it runs; ctest -j starts the costliest first, so a long test does not
# start last and hold up the end of a stage (a clean clone has no
# timings of its own yet). Without python3 the
# test is not registered (a configure-time status line says so).
find_package(Python3 COMPONENTS Interpreter)

function(rl_python_test name script timeout label)
  cmake_parse_arguments(PARSE_ARGV 4 arg "" "WORKING_DIRECTORY;COST"
                        "ARGS;ENVIRONMENT")
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "python3 not found: ${name} is not registered")
    return()
  endif()
  math(EXPR t "${timeout} * ${RL_TIMEOUT_MULT}")
  set(env PYTHONDONTWRITEBYTECODE=1 ${arg_ENVIRONMENT})
  add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} ${script} ${arg_ARGS})
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${t}
    LABELS ${label}
    SKIP_RETURN_CODE 77
    ENVIRONMENT "${env}")
  if(arg_COST)
    set_tests_properties(${name} PROPERTIES COST ${arg_COST})
  endif()
  if(arg_WORKING_DIRECTORY)
    set_tests_properties(${name} PROPERTIES
      WORKING_DIRECTORY ${arg_WORKING_DIRECTORY})
  endif()
endfunction()
