import type { Services } from "../services.ts";
import type { App } from "../http/types.ts";
import callOperation from "./apps/callOperation.ts";
import createSecret from "./secrets/createSecret.ts";
import deleteSecret from "./secrets/deleteSecret.ts";
import listSecrets from "./secrets/listSecrets.ts";
import putSecret from "./secrets/putSecret.ts";
import claimApp from "./apps/claimApp.ts";
import createApp from "./apps/createApp.ts";
import deleteApp from "./apps/deleteApp.ts";
import describeApp from "./apps/describeApp.ts";
import agentJson from "./apps/agentJson.ts";
import getAppPage from "./apps/getAppPage.ts";
import getCanonicalPage from "./apps/getCanonicalPage.ts";
import getIcon from "./apps/getIcon.ts";
import getSource from "./apps/getSource.ts";
import listApps from "./apps/listApps.ts";
import patchSource from "./apps/patchSource.ts";
import putIcon from "./apps/putIcon.ts";
import updateApp from "./apps/updateApp.ts";
import getMe from "./auth/getMe.ts";
import login from "./auth/login.ts";
import logout from "./auth/logout.ts";
import signup from "./auth/signup.ts";
import resendVerification from "./auth/resendVerification.ts";
import pages from "./pages/index.ts";
import approvePairing from "./pair/approvePairing.ts";
import pollPairing from "./pair/pollPairing.ts";
import redirectPairStart from "./pair/redirectPairStart.ts";
import startPairing from "./pair/startPairing.ts";
import healthz from "./system/healthz.ts";
import metrics from "./system/metrics.ts";
import openapi from "./system/openapi.ts";
import createToken from "./tokens/createToken.ts";
import deleteToken from "./tokens/deleteToken.ts";
import listTokens from "./tokens/listTokens.ts";
import createRoutine from "./routines/createRoutine.ts";
import deleteRoutine from "./routines/deleteRoutine.ts";
import getRoutine from "./routines/getRoutine.ts";
import listAppRoutines from "./routines/listAppRoutines.ts";
import listRoutines from "./routines/listRoutines.ts";
import runRoutine from "./routines/runRoutine.ts";
import updateRoutine from "./routines/updateRoutine.ts";
import createWebhook from "./webhooks/createWebhook.ts";
import deleteWebhook from "./webhooks/deleteWebhook.ts";
import deliverWebhook from "./webhooks/deliverWebhook.ts";
import getWebhook from "./webhooks/getWebhook.ts";
import listAppWebhooks from "./webhooks/listAppWebhooks.ts";
import listDeliveries from "./webhooks/listDeliveries.ts";
import listWebhooks from "./webhooks/listWebhooks.ts";
import updateWebhook from "./webhooks/updateWebhook.ts";
import webRoutes from "./app-page/index.ts";
import acceptShare from "./shares/acceptShare.ts";
import inviteShare from "./shares/inviteShare.ts";
import listShares from "./shares/listShares.ts";
import revokeShare from "./shares/revokeShare.ts";
import shareLinks from "./shares/shareLinks.ts";
import teamExposure from "./teams/exposure.ts";
import teamInvitations from "./teams/invitations.ts";
import teams from "./teams/teams.ts";
import transferApp from "./teams/transferApp.ts";
import versions from "./versions/versions.ts";
import copies from "./copies/copies.ts";
import getBuild from "./builds/getBuild.ts";
import getLogs from "./logs/getLogs.ts";
import adminApi from "./admin/api.ts";
import mcp from "./mcp/mcp.ts";
import oauthProtocol from "./oauth/protocol.ts";
import domainRoutes from "./domains/domains.ts";
import oauthResource from "./oauth/resource.ts";
import appMcp from "./mcp/app-mcp.ts";
import templateListing from "./templates/listing.ts";
import publishedTemplates from "./templates/published.ts";

type RouteModule = (app: App, ctx: Services) => void;

/** Every public route, one file each. A new route is one import and one entry here. */
const routes: RouteModule[] = [
  healthz,
  metrics,
  openapi,
  signup,
  resendVerification,
  login,
  logout,
  getMe,
  createToken,
  listTokens,
  deleteToken,
  createApp,
  getBuild,
  getLogs,
  adminApi,
  mcp,
  appMcp,
  oauthProtocol,
  domainRoutes,
  oauthResource,
  listApps,
  getAppPage,
  getCanonicalPage,
  updateApp,
  deleteApp,
  getSource,
  patchSource,
  claimApp,
  describeApp,
  agentJson,
  getIcon,
  putIcon,
  callOperation,
  listSecrets,
  createSecret,
  putSecret,
  deleteSecret,
  inviteShare,
  acceptShare,
  revokeShare,
  listShares,
  shareLinks,
  teams,
  teamInvitations,
  teamExposure,
  transferApp,
  versions,
  copies,
  templateListing,
  publishedTemplates,
  startPairing,
  pollPairing,
  approvePairing,
  redirectPairStart,
  webRoutes,
  pages,
  createRoutine,
  listRoutines,
  listAppRoutines,
  getRoutine,
  updateRoutine,
  deleteRoutine,
  runRoutine,
  createWebhook,
  listWebhooks,
  listAppWebhooks,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  listDeliveries,
  deliverWebhook,
];

export function registerRoutes(app: App, ctx: Services): void {
  for (const route of routes) route(app, ctx);
}
