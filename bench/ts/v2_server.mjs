// The "v2" TypeScript MCP SDK (npm @modelcontextprotocol/server 2.4.0 with @modelcontextprotocol/node 2.1.2)
// serving word_count: `ts-v2` of bench/.
//
//   node v2_server.mjs http PORT [--catalog]   # Streamable HTTP at http://127.0.0.1:PORT/mcp
//   node v2_server.mjs stdio [--catalog]       # serveStdio
//
// HTTP: v2's serving entry, createMcpHandler(factory, { responseMode: 'json' }), wrapped for a plain node:http
// server with toNodeHandler, behind the localhost Host and Origin guards that @modelcontextprotocol/node's README
// puts in front of a hand-wired node:http server. It serves the stateless era (2026-07-28: no session, the
// _meta envelope and the Mcp-* headers on every request) with JSON answers: the configuration comparable to
// the `official-modern` Python peer. The factory is called for every request (v2 builds one McpServer per
// exchange). 2025-era requests (no _meta envelope) go to the entry's default `legacy: 'stateless'` fallback:
// a fresh instance over a sessionless transport per request.
// stdio: serveStdio(factory), whose opening message picks the era (initialize: the handshake era).
// Nothing is logged per request.

import { createServer } from 'node:http';

import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

import { listenUntilStopped, parseArgs, registerTools } from './tools.mjs';

const { mode, port, catalog } = parseArgs(process.argv, 'node v2_server.mjs {http PORT|stdio} [--catalog]');

function build() {
    return registerTools(new McpServer({ name: 'word_count', title: 'Word count', version: '1.0.0' }), catalog);
}

if (mode === 'stdio') {
    serveStdio(build);
} else {
    const handler = toNodeHandler(createMcpHandler(build, { responseMode: 'json' }));
    const validateHost = localhostHostValidation();
    const validateOrigin = localhostOriginValidation();
    const server = createServer((req, res) => {
        if (!validateHost(req, res) || !validateOrigin(req, res)) {
            return;
        }
        if (req.url !== '/mcp') {
            res.writeHead(404, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Not found' }, id: null }));
            return;
        }
        void handler(req, res);
    });
    listenUntilStopped(server, port);
}
