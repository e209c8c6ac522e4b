// The "v1" TypeScript MCP SDK (npm @modelcontextprotocol/sdk 1.32.2) serving word_count: `ts-v1` of bench/.
//
//   node v1_server.mjs http PORT [--catalog]   # Streamable HTTP at http://127.0.0.1:PORT/mcp
//   node v1_server.mjs stdio [--catalog]       # StdioServerTransport
//
// HTTP: a plain node:http server; stateful sessions (sessionIdGenerator: randomUUID) with JSON answers
// (enableJsonResponse: true), the configuration of the `official` Python peer. As the SDK has it, an McpServer
// connects to one transport: every initialize (a POST without Mcp-Session-Id) gets a new McpServer and
// StreamableHTTPServerTransport, kept by session id until the session is closed (DELETE). The SDK's newest
// protocol version is 2025-11-25 (the handshake era). Nothing is logged per request.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

import { listenUntilStopped, parseArgs, registerTools } from './tools.mjs';

const { mode, port, catalog } = parseArgs(process.argv, 'node v1_server.mjs {http PORT|stdio} [--catalog]');

function build() {
    return registerTools(new McpServer({ name: 'word_count', title: 'Word count', version: '1.0.0' }), catalog);
}

function answerError(res, status, message) {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

if (mode === 'stdio') {
    await build().connect(new StdioServerTransport());
} else {
    const sessions = new Map(); // Mcp-Session-Id -> its transport

    async function handle(req, res) {
        if (req.url !== '/mcp') {
            answerError(res, 404, 'Not found');
            return;
        }
        const id = req.headers['mcp-session-id'];
        let transport = id === undefined ? undefined : sessions.get(id);
        if (id !== undefined && transport === undefined) {
            answerError(res, 404, 'Session not found');
            return;
        }
        if (transport === undefined) {
            // No session: an initialize (anything else is answered 400 by the transport, not kept).
            const fresh = new StreamableHTTPServerTransport({
                sessionIdGenerator: randomUUID,
                enableJsonResponse: true,
                onsessioninitialized: (sessionId) => {
                    sessions.set(sessionId, fresh);
                },
            });
            fresh.onclose = () => {
                if (fresh.sessionId !== undefined) {
                    sessions.delete(fresh.sessionId);
                }
            };
            await build().connect(fresh);
            transport = fresh;
        }
        await transport.handleRequest(req, res);
    }

    const server = createServer((req, res) => {
        handle(req, res).catch((error) => {
            if (!res.headersSent) {
                answerError(res, 500, String(error));
            } else {
                res.end();
            }
        });
    });
    listenUntilStopped(server, port);
}
