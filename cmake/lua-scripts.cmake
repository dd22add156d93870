# SPDX-License-Identifier: BSD-3-Clause
# lua-scripts.cmake -- builds the table of Lua scripts the library embeds
# (src/lua/README.md). Run as
#   cmake -DLUA_DIR=<src/lua> -DOUT_DIR=<dir> -P lua-scripts.cmake
# For each script LUA_DIR/<name>.lua it expands every line
# "--@include <helper>" with LUA_DIR/include/<helper>.lua (helpers may
# include helpers) and writes:
# - OUT_DIR/lint/<name>.lua: the expansion with its comments, each
#   helper after a line naming it, between "-- luacheck: push ignore
#   211" and "-- luacheck: pop" (a script uses only some of a helper's
#   functions), for luacheck;
# - OUT_DIR/sent/<name>.lua: the text a node receives: the expansion
#   without its comment lines and blank lines;
# - OUT_DIR/lua_scripts.inc: the C table of the sent texts with their
#   SHA1 digests, indexed by SCRIPT_<NAME> (scripts.h), included by
#   src/scripts.c.
# A script whose header has the line "--@creates-keys" is marked
# creates_keys (scripts.h).

foreach(v LUA_DIR OUT_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "lua-scripts.cmake: -D${v}=... is required")
  endif()
endforeach()

# expand(<text> <out var> <depth>): <text> with its include lines
# replaced by the helpers' expansions, marked for luacheck.
function(expand text out depth)
  if(depth GREATER 8)
    message(FATAL_ERROR "lua-scripts.cmake: includes nest too deep")
  endif()
  string(REGEX MATCHALL "--@include [^\n]*" lines "${text}")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^--@include " "" name "${line}")
    if(NOT name MATCHES "^[a-z_]+$")
      message(FATAL_ERROR "lua-scripts.cmake: bad include line: ${line}")
    endif()
    set(path "${LUA_DIR}/include/${name}.lua")
    if(NOT EXISTS "${path}")
      message(FATAL_ERROR "lua-scripts.cmake: no helper ${path}")
    endif()
    file(READ "${path}" body)
    math(EXPR next "${depth} + 1")
    expand("${body}" body ${next})
    string(REPLACE "${line}\n"
      "-- include/${name}.lua\n-- luacheck: push ignore 211\n${body}-- luacheck: pop\n"
      text "${text}")
  endforeach()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Written afresh: a script renamed or removed leaves nothing behind.
file(REMOVE_RECURSE "${OUT_DIR}/lint" "${OUT_DIR}/sent")
file(MAKE_DIRECTORY "${OUT_DIR}/lint" "${OUT_DIR}/sent")
file(GLOB scripts RELATIVE "${LUA_DIR}" "${LUA_DIR}/*.lua")
list(SORT scripts)
list(LENGTH scripts count)
set(table "/* Generated from src/lua by cmake/lua-scripts.cmake: do not edit. */\n")
string(APPEND table "static const struct script scripts[SCRIPT_COUNT] = {\n")
foreach(file IN LISTS scripts)
  string(REGEX REPLACE "\\.lua$" "" name "${file}")
  if(NOT name MATCHES "^[a-z][a-z-]*$")
    message(FATAL_ERROR "lua-scripts.cmake: bad script name: ${file}")
  endif()
  file(READ "${LUA_DIR}/${file}" text)
  if(NOT text MATCHES "\n$")
    message(FATAL_ERROR "lua-scripts.cmake: ${file} must end with a newline")
  endif()
  set(creates false)
  if(text MATCHES "(^|\n)--@creates-keys\n")
    set(creates true)
  endif()
  expand("${text}" text 0)
  file(WRITE "${OUT_DIR}/lint/${file}" "${text}")

  # Comment lines and blank lines go: the node runs only the code.
  string(REGEX REPLACE "\n[ \t]*--[^\n]*" "" sent "\n${text}")
  string(REGEX REPLACE "\n([ \t]*\n)+" "\n" sent "${sent}")
  string(REGEX REPLACE "^\n" "" sent "${sent}")
  file(WRITE "${OUT_DIR}/sent/${file}" "${sent}")
  string(SHA1 digest "${sent}")

  string(TOUPPER "${name}" id)
  string(REPLACE "-" "_" id "${id}")
  string(REPLACE "\\" "\\\\" c "${sent}")
  string(REPLACE "\"" "\\\"" c "${c}")
  string(REGEX REPLACE "\n$" "" c "${c}")
  string(REPLACE "\n" "\\n\"\n        \"" c "${c}")
  string(APPEND table "    [SCRIPT_${id}] = {\"${name}\",\n"
    "        \"${c}\\n\",\n"
    "        \"${digest}\", ${creates}},\n")
endforeach()
string(APPEND table "};\n"
  "_Static_assert(${count} == SCRIPT_COUNT,\n"
  "               \"one src/lua/<name>.lua per enum script_id\");\n")

# Rewritten only when it changes, so an edit to a comment rebuilds
# nothing.
set(inc "${OUT_DIR}/lua_scripts.inc")
set(old "")
if(EXISTS "${inc}")
  file(READ "${inc}" old)
endif()
if(NOT old STREQUAL table)
  file(WRITE "${inc}" "${table}")
endif()
