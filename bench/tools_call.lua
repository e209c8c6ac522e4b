-- wrk script for bench/http_load.py: POSTs MCP requests in either protocol era and checks every answer.
--
--   wrk -t1 -c32 -d5s --latency -s bench/tools_call.lua http://127.0.0.1:PORT/mcp -- \
--       method=tools/call version=2025-11-25 session=SESSION_ID text=TEXT words=9 chars=43 tools=1 last=NAME \
--       idbase=100000000000
--
-- method:  tools/call (word_count on `text`) or tools/list.
-- version: 2025-11-25 (handshake era: every request on the one session `session`, set up beforehand) or
--          2026-07-28 (stateless era: no session; each request carries _meta in its params and the
--          MCP-Protocol-Version, Mcp-Method and, for tools/call, Mcp-Name headers).
-- tools:   how many tools tools/list must list; `last` the name of the last one.
--
-- Every request gets its own JSON-RPC id (ids must be unique among a session's requests in flight), and
-- every answer is checked; it counts as "ok" only when (see check() for how this stays cheap)
--   * the status is 200 and the content type application/json, or text/event-stream whose last `data:`
--     line holding a result is then the message checked;
--   * the message is JSON-RPC 2.0 with an id that this thread sent and has not had answered yet, and a
--     result, no error;
--   * the result is of the era asked for: `"resultType":"complete"` and the server's identity in _meta
--     in the stateless era, no resultType in the handshake era;
--   * tools/call: structuredContent {words, chars} as expected, a text content block, isError not true;
--     tools/list: exactly `tools` inputSchemas, word_count and `last` among the names, no nextCursor.
-- done() prints one "BENCH_JSON {...}" line that http_load.py parses, and exits with status 3 when any
-- answer failed a check or any request failed (socket error, timeout), so that wrk alone reports it too.

local threads = {}
local next_tid = 1

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

local function json_string(s)
   return '"' .. s:gsub('\\', '\\\\'):gsub('"', '\\"') .. '"'
end

function init(args)
   local opt = {}
   for _, arg in ipairs(args) do
      local key, value = arg:match("^([%w_]+)=(.*)$")
      if key == nil then
         error("expected key=value, got " .. arg)
      end
      opt[key] = value
   end
   method = opt.method or "tools/call"
   version = opt.version or "2025-11-25"
   modern = version >= "2026"
   local session = opt.session or ""
   local text = opt.text or "the quick brown fox jumps over the lazy dog"
   words = opt.words or "9"
   chars = opt.chars or "43"
   tools = tonumber(opt.tools or "1")
   last = opt.last or "word_count"
   -- ids: idbase (a multiple of 1e11 that http_load.py changes with every run, so that a run never reuses
   -- the ids of requests that an earlier run left in flight on the same session) + thread * 1e9 + a counter.
   seq = tonumber(opt.idbase or "0") + tid * 1000000000
   pending = {}
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
   local params
   if method == "tools/call" then
      params = '"name":"word_count","arguments":{"text":' .. json_string(text) .. '}'
   else
      params = ''
   end
   if modern then
      headers["Mcp-Method"] = method
      if method == "tools/call" then
         headers["Mcp-Name"] = "word_count"
      end
      local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":' .. json_string(version) ..
         ',"io.modelcontextprotocol/clientCapabilities":{},' ..
         '"io.modelcontextprotocol/clientInfo":{"name":"wiremcp-bench","version":"1.0.0"}}'
      params = params == '' and meta or params .. ',' .. meta
   end
   tail = '","params":{' .. params .. '}}'
end

function request()
   seq = seq + 1
   pending[seq] = true
   return wrk.format("POST", nil, headers, '{"jsonrpc":"2.0","id":' .. string.format("%.0f", seq) ..
                     ',"method":"' .. method .. tail)
end

local function count(s, needle)
   local n, at = 0, 1
   while true do
      local i = s:find(needle, at, true)
      if i == nil then return n end
      n, at = n + 1, i + #needle
   end
end

-- Why `message` (an answer to a request we sent, id already checked) is not the expected answer, or nil
-- when it is.
local function problem(message)
   if not message:find('^%s*{') or not message:find('"jsonrpc"%s*:%s*"2%.0"') then
      return "not a JSON-RPC 2.0 object"
   end
   if message:find('"error"%s*:%s*{') then
      return "an error"
   end
   if not message:find('"result"%s*:%s*{') then
      return "no result"
   end
   if modern then
      if not message:find('"resultType"%s*:%s*"complete"') then
         return "no resultType complete (stateless era)"
      end
      if not message:find('"io.modelcontextprotocol/serverInfo"', 1, true) then
         return "no serverInfo in the result's _meta (stateless era)"
      end
   elseif message:find('"resultType"', 1, true) then
      return "a resultType in a handshake-era answer"
   end
   if method == "tools/call" then
      if not message:find('"structuredContent"%s*:%s*{') then
         return "no structuredContent"
      end
      if not message:find('"words"%s*:%s*' .. words .. '[,}%s]') or
         not message:find('"chars"%s*:%s*' .. chars .. '[,}%s]') then
         return "wrong structuredContent"
      end
      if not message:find('"type"%s*:%s*"text"') then
         return "no text content"
      end
      if message:find('"isError"%s*:%s*true') then
         return "isError"
      end
      return nil
   end
   local listed = count(message, '"inputSchema"')
   if listed ~= tools then
      return string.format("%d tools listed, expected %d", listed, tools)
   end
   if not message:find('"name"%s*:%s*"word_count"') or not message:find('"name"%s*:%s*"' .. last .. '"') then
      return "word_count or " .. last .. " missing"
   end
   if message:find('"nextCursor"', 1, true) then
      return "a nextCursor (the list should fit one answer)"
   end
   return nil
end

-- The last answer that passed every check, with its id cut out. Answers are deterministic but for the id,
-- so an answer that is byte for byte this one (once its own id is cut out) passed them too; only answers
-- that differ go through the checks again. This keeps the client cheap for 500-tool lists (150–230 kB).
local known_good = nil

local function check(message)
   if message == nil then
      return "no JSON-RPC message"
   end
   local i, j, id = message:find('"id"%s*:%s*(%d+)')
   id = tonumber(id)
   if id == nil or not pending[id] then
      return "unknown or repeated id"
   end
   pending[id] = nil
   local rest = message:sub(1, i - 1) .. message:sub(j + 1)
   if rest == known_good then
      return nil
   end
   local why = problem(message)
   if why == nil then
      known_good = rest
   end
   return why
end

local function fail(kind, why, body)
   if first_bad == "" then
      first_bad = kind .. ": " .. why .. ": " .. (body or ""):sub(1, 300)
   end
end

function response(status, hdrs, body)
   if status ~= 200 then
      bad_status = bad_status + 1
      fail("HTTP " .. status, "status", body)
      return
   end
   local ctype = ""
   for k, v in pairs(hdrs) do
      if k:lower() == "content-type" then ctype = v:lower() end
   end
   local message = nil
   if ctype:find("text/event-stream", 1, true) then
      sse = sse + 1
      for line in body:gmatch("[^\r\n]+") do
         if line:sub(1, 5) == "data:" and line:find('"result"', 1, true) then
            message = line:sub(6)
         end
      end
   elseif ctype:find("application/json", 1, true) then
      message = body
   end
   local why = check(message)
   if why == nil then
      ok = ok + 1
   else
      bad_body = bad_body + 1
      fail("bad body", why .. " (" .. ctype .. ")", body)
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
   io.flush()
   local failed = summary.requests - n_ok + e.connect + e.read + e.write + e.timeout
   if failed > 0 then
      io.stderr:write(string.format("tools_call.lua: %.0f failed answers or requests\n", failed))
      os.exit(3)
   end
end
