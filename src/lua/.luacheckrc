-- luacheck's settings for the scripts of src/lua, checked expanded
-- (<build>/lua/lint, the ctest test lua_lint; src/lua/README.md).
std = "lua51" -- the Lua that Redis embeds
-- What Redis gives a script; a script defines no global of its own.
read_globals = {"redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit",
                "struct"}
ignore = {
  -- Shadowing: helpers name their parameters for themselves (queue.lua's
  -- open(kind) beside a script's kind, the semaphore's local held beside
  -- queue.lua's held()).
  "43",
  -- Two helpers define server_ms() alike (prune.lua for the reader
  -- scripts, queue.lua); and queue.lua's settle(now) after the readers'
  -- settle(k, now) in the fair reader releases, on purpose
  -- (include/fair_reader_release.lua).
  "411/server_ms", "411/settle",
}
