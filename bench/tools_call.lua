-- wrk script for bench/http_load.py: POSTs MCP requests on one established session and checks every answer.
--
--   wrk -t1 -c32 -d5s --latency -s bench/tools_call.lua http://127.0.0.1:PORT/mcp -- \
--       METHOD SESSION_ID PROTOCOL_VERSION TEXT WORDS CHARS
--
-- METHOD is tools/call (word_count on TEXT) or tools/list. Every request gets its own JSON-RPC id
-- (ids must be unique among a session's requests in flight). An answer counts as "ok" when its status
-- is 200 and its JSON-RPC message (the body, or the last `data:` line holding a result of an SSE stream)
-- is the expected result. done() prints one "BENCH_JSON {...}" line that http_load.py parses.

local threads = {}
local next_tid = 1

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

function init(args)
   method = args[1] or "tools/call"
   local session = args[2] or ""
   local version = args[3] or "2025-11-25"
   local text = args[4] or "the quick brown fox jumps over the lazy dog"
   words = args[5] or "9"
   chars = args[6] or "43"
   seq = tid * 1000000000
   ok, bad_status, bad_body, sse = 0, 0, 0, 0
   first_bad = ""
   headers = {
      ["Accept"] = "application/json, text/event-stream",
      ["Content-Type"] = "application/json",
      ["MCP-Protocol-Version"] = version,
   }
   if session ~= "" then
      headers["Mcp-Session-Id"] = session
   end
   if method == "tools/call" then
      tail = '","params":{"name":"word_count","arguments":{"text":"' .. text .. '"}}}'
   else
      tail = '","params":{}}'
   end
end

function request()
   seq = seq + 1
   return wrk.format("POST", nil, headers, '{"jsonrpc":"2.0","id":' .. string.format("%.0f", seq) ..
                     ',"method":"' .. method .. tail)
end

local function valid(message)
   if message == nil or not message:find('"result"', 1, true) then
      return false
   end
   if method == "tools/call" then
      return message:find('"structuredContent"', 1, true) ~= nil
         and message:find('"words"%s*:%s*' .. words .. '[,}%s]') ~= nil
         and message:find('"chars"%s*:%s*' .. chars .. '[,}%s]') ~= nil
         and message:find('"isError"%s*:%s*true') == nil
   end
   return message:find('"tools"', 1, true) ~= nil and message:find('"word_count"', 1, true) ~= nil
end

function response(status, hdrs, body)
   if status ~= 200 then
      bad_status = bad_status + 1
      if first_bad == "" then first_bad = "HTTP " .. status .. ": " .. (body or ""):sub(1, 200) end
      return
   end
   local ctype = ""
   for k, v in pairs(hdrs) do
      if k:lower() == "content-type" then ctype = v:lower() end
   end
   local message = body
   if ctype:find("text/event-stream", 1, true) then
      sse = sse + 1
      message = nil
      for line in body:gmatch("[^\r\n]+") do
         if line:sub(1, 5) == "data:" and line:find('"result"', 1, true) then
            message = line:sub(6)
         end
      end
   end
   if valid(message) then
      ok = ok + 1
   else
      bad_body = bad_body + 1
      if first_bad == "" then first_bad = "bad body: " .. (body or ""):sub(1, 200) end
   end
end

local function escape(s)
   return (s:gsub('\\', '\\\\'):gsub('"', '\\"'):gsub('[%c]', ' '))
end

function done(summary, latency, requests)
   local n_ok, n_status, n_body, n_sse, bad = 0, 0, 0, 0, ""
   for _, thread in ipairs(threads) do
      n_ok = n_ok + thread:get("ok")
      n_status = n_status + thread:get("bad_status")
      n_body = n_body + thread:get("bad_body")
      n_sse = n_sse + thread:get("sse")
      if bad == "" then bad = thread:get("first_bad") end
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests":%.0f,"duration_us":%.0f,"p50_us":%.0f,"p90_us":%.0f,"p99_us":%.0f,' ..
      '"max_us":%.0f,"mean_us":%.1f,"ok":%.0f,"bad_status":%.0f,"bad_body":%.0f,"sse":%.0f,' ..
      '"err_connect":%.0f,"err_read":%.0f,"err_write":%.0f,"err_timeout":%.0f,"err_status":%.0f,' ..
      '"first_bad":"%s"}\n',
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency.max, latency.mean, n_ok, n_status, n_body, n_sse,
      e.connect, e.read, e.write, e.timeout, e.status, escape(bad)))
end
