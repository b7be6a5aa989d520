import type { ApiError } from "../../errors/index.ts";
import { html, type SafeHtml } from "../html.ts";
import { layout } from "../layout.ts";

export interface SignInFormOptions {
  /** Where to go back to after signing in: a path on this site. */
  returnTo: string;
  login?: string;
  error?: string;
}

/** The sign-in form any page can show in place of itself; it posts to `POST /sign-in`. */
export function signInForm(options: SignInFormOptions): SafeHtml {
  return html`<form method="post" action="/sign-in">
${options.error !== undefined && html`<p class="error" role="alert">${options.error}</p>`}
<label for="login">Email or handle</label>
<input id="login" name="login" autocomplete="username" required value="${options.login ?? ""}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<input type="hidden" name="return_to" value="${options.returnTo}">
<button class="button" type="submit">Sign in</button>
</form>
<p>No account yet? <a href="/sign-up?return_to=${encodeURIComponent(options.returnTo)}">Create one</a>.</p>`;
}

export function signInPage(options: SignInFormOptions & { intro?: string }): SafeHtml {
  return layout({
    title: "Sign in",
    body: html`<h1>Sign in</h1>
${options.intro !== undefined && html`<p>${options.intro}</p>`}
${signInForm(options)}`,
  });
}

/**
 * The sign-in page of an app's custom domain: sign-in is the main host's (its session cookie is
 * not the domain's), so this links there, and the person comes back to the domain signed in.
 */
export function domainSignInPage(options: { link: string; intro: string; service: string }): SafeHtml {
  return layout({
    title: "Sign in",
    body: html`<h1>Sign in</h1>
<p>${options.intro}</p>
<p><a class="button" href="${options.link}">Sign in on ${options.service}</a></p>`,
  });
}

/** A stop on the way to another site, which the browser leaves at once (and a link, should it not). */
export function onTheWayPage(options: { title: string; to: string; where: string }): SafeHtml {
  return layout({
    title: options.title,
    goTo: options.to,
    body: html`<h1>${options.title}</h1>
<p><a class="button" href="${options.to}">Continue to ${options.where}</a></p>`,
  });
}

const TITLES: Record<number, string> = {
  400: "That request did not make sense",
  401: "Please sign in",
  403: "Not allowed",
  404: "Not found",
  409: "Already done",
  410: "Expired",
  429: "Too many attempts",
};

/** Any refusal as a page, with the registry's message. */
export function errorPage(failure: ApiError): SafeHtml {
  const title = TITLES[failure.status] ?? "Something went wrong";
  return layout({
    title,
    body: html`<h1>${title}</h1>
<p role="alert">${failure.message}</p>`,
  });
}
