-- wrk.lua — the request generators of the HTTP bench, one script for every
-- workload, chosen by the environment (wrk's LuaJIT has os.getenv):
--
--   WRK_MODE=get      GET /DB/<random id of N preloaded docs>
--   WRK_MODE=put      PUT /DB/<id unique across threads and requests>
--   WRK_MODE=bulk     POST /DB/_bulk_docs with the body in WRK_BODY_FILE
--   WRK_MODE=alldocs  GET /DB/_all_docs?include_docs=true&limit=PAGE from a
--                     random startkey
--   WRK_MODE=trivial  GET /  (the generator's own ceiling)
--   WRK_DB, WRK_N (preloaded docs, ids d0000000..), WRK_PAGE
--   WRK_AUTH          an Authorization header for every request (divan's admin)
--
-- done() prints one line, "WRKJSON {...}", that bench.js parses: requests,
-- duration, p50/p99 latency in microseconds, errors by kind.

local mode = os.getenv("WRK_MODE") or "trivial"
local db = os.getenv("WRK_DB") or "bench"
local n = tonumber(os.getenv("WRK_N") or "1")
local page = tonumber(os.getenv("WRK_PAGE") or "1000")

local counter = 0 -- requests made by this thread (unique PUT ids)
local thread_no = 0
local threads = {}

-- Each thread gets its own number so PUT ids never collide across threads.
function setup(thread)
  thread_no = thread_no + 1
  thread:set("tno", thread_no)
  table.insert(threads, thread)
end

local body = nil
local json_headers = { ["Content-Type"] = "application/json" }
local auth = os.getenv("WRK_AUTH") or ""
if auth ~= "" then
  json_headers["Authorization"] = auth
  wrk.headers["Authorization"] = auth
end

function init(args)
  math.randomseed(os.time() + (tno or 0) * 7919)
  if mode == "bulk" then
    local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
    body = f:read("*a")
    f:close()
  end
end

local function docid(i)
  return string.format("d%07d", i)
end

function request()
  if mode == "get" then
    return wrk.format("GET", "/" .. db .. "/" .. docid(math.random(0, n - 1)))
  elseif mode == "put" then
    counter = counter + 1
    local id = string.format("p%d-%d-%d", tno or 0, counter, math.random(0, 1e9))
    return wrk.format("PUT", "/" .. db .. "/" .. id, json_headers,
      '{"type":"put","n":' .. counter .. ',"name":"a new document","tags":["x","y"]}')
  elseif mode == "bulk" then
    return wrk.format("POST", "/" .. db .. "/_bulk_docs", json_headers, body)
  elseif mode == "alldocs" then
    local start = math.random(0, math.max(0, n - page))
    return wrk.format("GET", "/" .. db .. "/_all_docs?include_docs=true&limit=" .. page ..
      "&startkey=%22" .. docid(start) .. "%22")
  else
    return wrk.format("GET", "/")
  end
end

-- No response() callback: defining one makes wrk hand every body to Lua,
-- which would make the generator the bottleneck on 250 KB _all_docs pages.
-- Status errors (>= 400) come from wrk's own count.
function done(summary, latency, requests)
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    latency.max, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout))
end
