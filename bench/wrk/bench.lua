-- wrk script shared by every Pithos benchmark operation (and by its baseline:
-- the very same script drives both servers, so wrk's own CPU cost is identical).
--
-- Script arguments (after `--` on wrk's command line):
--   1 mode      "template" (one request shape with per-request variation) or
--               "lock"     (PUT /locks/<fresh name> then DELETE it with the token
--                           from the 201 answer; needs one connection per wrk thread)
--   2 method    HTTP method
--   3 path      path template
--   4 body      body template ("" = no body)
--   5 keys      how many distinct values {{k}} cycles through
--   6 run id    substituted for {{r}} (unique per wrk run, keeps lock names fresh)
--   7 token     value of the Auth-Token header
--   8 expect    substring every 2xx body must contain ("" = no body check)
--
-- Template variables: {{k}} = key index, zero-padded to 6 digits, cycling
-- through `keys`; {{i}} = the same index unpadded (usable as a JSON number);
-- {{n}} = a number unique within the run; {{r}} = run id.
--
-- Output (stdout, parsed by bench/wrk.ts) from done():
--   BENCH_SUMMARY duration_us=.. requests=.. bytes=.. connect=.. read=.. write=.. status=.. timeout=..
--   BENCH_COUNTS pairs=.. bad_bodies=.. lock_conflicts=..
--   BENCH_STATUS <code>=<count> ...
--   BENCH_LATENCY <us>:<count> ...      (wrk's latency histogram, all buckets)

local threads = {}
local next_tid = 0

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

-- per-thread globals, read back in done() through thread:get()
tid = 0
statuses = {}
pairs_ok = 0
bad_bodies = 0
lock_conflicts = 0

local mode, method, nkeys, runid, expect
local path_parts, body_parts
local head
local counter = 0
local cache = nil
local lock_name, lock_token, last_kind

local function split(template)
   local parts = {}
   local pos = 1
   while true do
      local s, e, name = string.find(template, "{{(%a)}}", pos)
      if not s then
         table.insert(parts, string.sub(template, pos))
         return parts
      end
      table.insert(parts, string.sub(template, pos, s - 1))
      table.insert(parts, { name })
      pos = e + 1
   end
end

local function has_var(parts, name)
   for _, p in ipairs(parts) do
      if type(p) == "table" and p[1] == name then return true end
   end
   return false
end

local function render(parts, vars)
   local out = {}
   for i, p in ipairs(parts) do
      if type(p) == "table" then out[i] = vars[p[1]] else out[i] = p end
   end
   return table.concat(out)
end

local function build(m, path, body)
   if body == nil or body == "" then
      return m .. " " .. path .. head .. "\r\n"
   end
   return m .. " " .. path .. head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

local function vars_for(i)
   return {
      k = string.format("%06d", i % nkeys),
      i = string.format("%d", i % nkeys),
      n = string.format("%d", tid * 1000000000 + i),
      r = runid,
   }
end

function init(args)
   mode = args[1]
   method = args[2]
   path_parts = split(args[3])
   body_parts = split(args[4] or "")
   nkeys = tonumber(args[5]) or 1
   if nkeys < 1 then nkeys = 1 end
   runid = args[6] or "0"
   expect = args[8] or ""
   local token = args[7] or ""
   head = " HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. tostring(wrk.port) ..
          "\r\nAuth-Token: " .. token ..
          "\r\nContent-Type: application/json\r\n"
   -- spread threads over the key space
   counter = (tid * 7919) % nkeys
   if mode == "template" and not has_var(path_parts, "n") and not has_var(body_parts, "n") then
      -- every distinct request can be built up front: request() is then a lookup
      cache = {}
      for i = 0, nkeys - 1 do
         local v = vars_for(i)
         cache[i + 1] = build(method, render(path_parts, v), render(body_parts, v))
      end
   end
end

function request()
   local i = counter
   counter = counter + 1
   if mode == "lock" then
      if lock_token ~= nil then
         last_kind = "release"
         local body = '{"token":"' .. lock_token .. '"}'
         lock_token = nil
         return build("DELETE", lock_name, body)
      end
      last_kind = "acquire"
      lock_name = render(path_parts, vars_for(i))
      return build("PUT", lock_name, render(body_parts, vars_for(i)))
   end
   if cache ~= nil then
      return cache[(i % nkeys) + 1]
   end
   local v = vars_for(i)
   return build(method, render(path_parts, v), render(body_parts, v))
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
   if status >= 200 and status < 300 and expect ~= "" then
      if not string.find(body, expect, 1, true) then
         bad_bodies = bad_bodies + 1
      end
   end
   if mode == "lock" then
      if last_kind == "acquire" then
         if status == 201 then
            lock_token = string.match(body, '"token"%s*:%s*"([^"\\]*)"')
            if lock_token == nil then bad_bodies = bad_bodies + 1 end
         elseif status == 423 then
            lock_conflicts = lock_conflicts + 1
         end
      elseif last_kind == "release" then
         if status == 200 then pairs_ok = pairs_ok + 1 end
      end
      last_kind = nil
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH_SUMMARY duration_us=%d requests=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
      summary.duration, summary.requests, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout))
   local codes = {}
   local p, bad, conflicts = 0, 0, 0
   for _, t in ipairs(threads) do
      for code, n in pairs(t:get("statuses")) do
         codes[code] = (codes[code] or 0) + n
      end
      p = p + t:get("pairs_ok")
      bad = bad + t:get("bad_bodies")
      conflicts = conflicts + t:get("lock_conflicts")
   end
   io.write(string.format("BENCH_COUNTS pairs=%d bad_bodies=%d lock_conflicts=%d\n", p, bad, conflicts))
   io.write("BENCH_STATUS")
   for code, n in pairs(codes) do
      io.write(string.format(" %d=%d", code, n))
   end
   io.write("\n")
   local out = { "BENCH_LATENCY" }
   for i = 1, #latency do
      local v, n = latency(i)
      out[#out + 1] = string.format("%d:%d", v, n)
   end
   io.write(table.concat(out, " "), "\n")
end
