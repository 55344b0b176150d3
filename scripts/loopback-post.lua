-- loopback-post.lua: wrk script for scripts/loopback-bench.sh. Every request
-- is a POST /plants of a NewPlant with its own id, counting up from
-- $BENCH_ID_BASE (or from the current time in microseconds), with the bearer
-- token from $BENCH_TOKEN. Run wrk with one thread (-t1): the counter is per
-- thread.

local base = tonumber(os.getenv("BENCH_ID_BASE") or "") or os.time() * 1000000
local token = os.getenv("BENCH_TOKEN") or ""
local name = os.getenv("BENCH_NAME") or "Monstera"
-- BENCH_PATH and BENCH_ID_FIELD let a server with another route and id
-- field (the PocketBase peer: /api/collections/plants/records, pid) take
-- the same load.
local path = os.getenv("BENCH_PATH") or "/plants"
local idField = os.getenv("BENCH_ID_FIELD") or "id"
local counter = 0

local headers = { ["Content-Type"] = "application/json" }
if token ~= "" then
  headers["Authorization"] = "Bearer " .. token
end

function request()
  counter = counter + 1
  local body = string.format('{"%s":%d,"name":"%s"}', idField, base + counter, name)
  return wrk.format("POST", path, headers, body)
end
