import { PAIRED_TOKEN_DAYS } from "../../domain/tokens/tokens.ts";
import type { PendingPairing } from "../../domain/pairing/index.ts";
import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";
import { signInPage } from "./common.ts";

// The approval page of device pairing (DECISIONS §2): sign in, compare the code, decide.

export function pairSignInPage(returnTo: string, error?: string, login?: string): SafeHtml {
  return signInPage({ returnTo, error, login, intro: "Sign in to connect an agent to your Brickyard account." });
}

export function enterCodePage(options: { handle: string; code?: string; error?: string }): SafeHtml {
  return layout({
    title: "Connect an agent",
    handle: options.handle,
    body: html`<h1>Connect an agent</h1>
<p>Enter the code your agent shows you. It looks like <span class="label nowrap">SVC-XXXXXX</span>.</p>
<form method="get" action="/pair">
${options.error !== undefined && html`<p class="error" role="alert" id="code-error">${options.error}</p>`}
<label for="code">Code</label>
<input id="code" name="code" required autocomplete="off" autocapitalize="characters" spellcheck="false" value="${options.code ?? ""}"${options.error !== undefined && html` aria-describedby="code-error" aria-invalid="true"`}>
<button class="button" type="submit">Continue</button>
</form>`,
  });
}

export function confirmPage(options: { handle: string; pairing: PendingPairing }): SafeHtml {
  const { pairing } = options;
  return layout({
    title: "Approve access?",
    handle: options.handle,
    body: html`<h1>Approve access?</h1>
<p><span class="label">${pairing.label ?? "An agent"}</span> asks to act as <span class="label">@${options.handle}</span>.
If you approve, it receives a user token for ${PAIRED_TOKEN_DAYS} days; you can revoke it any time.</p>
<p id="compare">Approve only if your agent shows exactly this code:</p>
<p class="code" aria-describedby="compare">${pairing.userCode}</p>
<form method="post" action="/pair">
<input type="hidden" name="user_code" value="${pairing.userCode}">
<div class="actions">
<button class="button" type="submit" name="decision" value="approve">Approve</button>
<button class="button" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>`,
  });
}

export function decidedPage(options: { handle: string; status: "approved" | "denied" }): SafeHtml {
  const approved = options.status === "approved";
  return layout({
    title: approved ? "Access approved" : "Access denied",
    handle: options.handle,
    body: approved
      ? html`<h1>Access approved</h1>
<p role="status">Your agent receives its token on its next check, within a few seconds. You can close this page.</p>
<p class="muted">The token lasts ${PAIRED_TOKEN_DAYS} days and is listed among your tokens as paired.</p>`
      : html`<h1>Access denied</h1>
<p role="status">Your agent gets nothing. If this was a mistake, ask it to start pairing again.</p>`,
  });
}
