/**
 * How agents connect (DECISIONS §11): the MCP URL and the configuration snippets for the common
 * clients, shown in `mcpHint` of create responses, by `get_setup` and on `/mcp/setup`. No token
 * is ever put in a snippet: the agent adds its own, or pairs for one.
 */
export interface McpHint {
  setupUrl: string;
  snippets: Record<string, string>;
}

export function mcpHint(baseUrl: string): McpHint {
  const url = `${baseUrl}/mcp`;
  return {
    setupUrl: `${baseUrl}/mcp/setup`,
    snippets: {
      "claude-code": `claude mcp add --transport http brickyard ${url} --header "Authorization: Bearer <token>"`,
      cursor: JSON.stringify({ mcpServers: { brickyard: { url, headers: { Authorization: "Bearer <token>" } } } }, null, 2),
      vscode: JSON.stringify({ servers: { brickyard: { type: "http", url, headers: { Authorization: "Bearer <token>" } } } }, null, 2),
      curl: `curl -s ${url} -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -H 'authorization: Bearer <token>' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'`,
    },
  };
}

/** The snippets' names as the setup page shows them. */
export const CLIENT_NAMES: Record<string, string> = { "claude-code": "Claude Code", cursor: "Cursor (.cursor/mcp.json)", vscode: "VS Code (.vscode/mcp.json)", curl: "curl" };
