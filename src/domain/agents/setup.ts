/**
 * How agents connect (DECISIONS §11): the MCP URL and the configuration snippets for the common
 * clients, shown in `mcpHint` of create responses, by `get_setup` and on `/mcp/setup`. No token
 * is put in a snippet, except on the setup page for the signed-in person who asked it to mint
 * one there (`withToken`), in that one answer.
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

/** The snippets with `token` in place of `<token>`: only for the person who just minted it. */
export function withToken(hint: McpHint, token: string): McpHint {
  return { ...hint, snippets: Object.fromEntries(Object.entries(hint.snippets).map(([id, text]) => [id, text.replaceAll("<token>", token)])) };
}

/** The snippets' names as the setup page shows them. */
export const CLIENT_NAMES: Record<string, string> = { "claude-code": "Claude Code", cursor: "Cursor (.cursor/mcp.json)", vscode: "VS Code (.vscode/mcp.json)", curl: "curl" };
