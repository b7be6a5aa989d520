import type { Services } from "../../services.ts";
import type { App } from "../../http/types.ts";
import assetRoutes from "./assetRoutes.ts";
import getActivity from "./getActivity.ts";
import getDiag from "./getDiag.ts";
import getEvents from "./getEvents.ts";
import getFrame from "./getFrame.ts";
import listFeedback from "./listFeedback.ts";
import replyFeedback from "./replyFeedback.ts";
import postDiagReport from "./postDiagReport.ts";
import postFeedback from "./postFeedback.ts";
import postLoadError from "./postLoadError.ts";
import putStarterPrompt from "./putStarterPrompt.ts";
import putVisibility from "./putVisibility.ts";
import refreshRenderToken from "./refreshRenderToken.ts";
import uploadAsset from "./uploadAsset.ts";

/** Apps in the browser (issue 7): frame, render tokens, live events, reports, assets, settings. */
export default function webRoutes(app: App, ctx: Services): void {
  for (const route of [
    getFrame,
    refreshRenderToken,
    getEvents,
    postDiagReport,
    postLoadError,
    postFeedback,
    listFeedback,
    replyFeedback,
    getDiag,
    getActivity,
    putStarterPrompt,
    putVisibility,
    uploadAsset,
    assetRoutes,
  ]) {
    route(app, ctx);
  }
}
