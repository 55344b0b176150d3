-- pg-scaling-list.lua: wrk script for scripts/pg-scaling.sh. Every request is
-- GET /plants?limit=$LIST_LIMIT&after=<a random id below $LIST_MAX_ID>, so
-- that pages come from all over the primary key's index, with the bearer
-- token from $BENCH_TOKEN.

local maxID = tonumber(os.getenv("LIST_MAX_ID") or "") or 1000000
local limit = os.getenv("LIST_LIMIT") or "100"
local headers = { Authorization = "Bearer " .. (os.getenv("BENCH_TOKEN") or "") }

function setup(thread)
  thread:set("seed", math.random(1, 1000000))
end

function init(args)
  math.randomseed(seed or os.time())
end

function request()
  local after = math.random(0, maxID)
  return wrk.format("GET", "/plants?limit=" .. limit .. "&after=" .. after, headers)
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("pg-scaling-list.lua: status " .. status .. ": " .. body .. "\n")
  end
end
