-- wrk script for bench/bench_throughput.py: POST {"code":"1+1","context":cid} to
-- /v1/sandboxes/{sid}/execute. The contexts ("sid cid" per line) come from the file named by
-- the first script argument (the second is wrk's thread count); each wrk thread rotates over its own share of them.
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local reqs = {}
local n = 0

function init(args)
  local all = {}
  for line in io.lines(args[1]) do
    local sid, cid = line:match("(%S+)%s+(%S+)")
    if sid then table.insert(all, {sid, cid}) end
  end
  local nthreads = tonumber(args[2]) or 1
  for i, c in ipairs(all) do
    if (i - 1) % nthreads == (tid - 1) % nthreads then
      table.insert(reqs, wrk.format("POST", "/v1/sandboxes/" .. c[1] .. "/execute",
        {["Content-Type"] = "application/json"},
        '{"code":"1+1","context":"' .. c[2] .. '"}'))
    end
  end
end

function request()
  n = n + 1
  return reqs[(n - 1) % #reqs + 1]
end
