import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import { registerPages } from "../../web/scope.ts";
import decidePairing from "./decidePairing.ts";
import getClaimPage from "./getClaimPage.ts";
import getPairPage from "./getPairPage.ts";
import postClaimConfirm from "./postClaimConfirm.ts";
import postClaimSession from "./postClaimSession.ts";
import getSignIn from "./getSignIn.ts";
import postSignIn from "./postSignIn.ts";
import shareLinkPage from "./shareLinkPage.ts";
import verifyEmail from "./verifyEmail.ts";
import invitationRoutes from "./invitationPage.ts";
import teamInvitationRoutes from "./teamInvitationPage.ts";
import templatePageRoutes from "./templatePage.ts";
import mcpSetupRoutes from "./mcpSetupPage.ts";
import docsPages from "./docsPages.ts";
import consolePages from "../console/front.ts";
import appTabs from "../console/app-tabs.ts";
import appAutomation from "../console/app-automation.ts";
import appData from "../console/app-data.ts";
import appDiagnostics from "../console/app-diagnostics.ts";
import appUpload from "../console/app-upload.ts";
import appTemplate from "../console/app-template.ts";
import accountPages from "../console/account.ts";
import buildPages from "../console/build.ts";
import adminPages from "../admin/pages.ts";
import reportApp from "../app-page/reportApp.ts";
import oauthConsent from "../oauth/consent.ts";
import appDomains from "../console/app-domains.ts";

/** Every server-rendered page, in the page scope (form bodies, Origin rule, HTML errors). */
export default function pages(app: App, ctx: Services): void {
  registerPages(app, ctx, [getSignIn, postSignIn, getPairPage, decidePairing, getClaimPage, postClaimSession, postClaimConfirm, shareLinkPage, verifyEmail, invitationRoutes, teamInvitationRoutes, templatePageRoutes, mcpSetupRoutes, docsPages, consolePages, appTabs, appAutomation, appData, appDiagnostics, appUpload, appTemplate, accountPages, buildPages, adminPages, reportApp, oauthConsent, appDomains]);
}
