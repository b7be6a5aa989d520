// Brickyard client SDK: `window.svc` inside an app frame (DECISIONS §5). The frame is sandboxed
// without allow-same-origin, so every call is cross-origin and carries the render token in the
// Authorization header; cookies are never sent (credentials: "omit").
(function (config) {
  "use strict";
  var appBase = config.base + "/app/" + encodeURIComponent(config.appId);
  var token = config.token;
  var expiresAt = config.expiresAt;
  var source = null;
  var reportsLeft = 20;

  function SvcError(status, error) {
    var err = new Error(error.message || error.kind);
    err.name = "SvcError";
    err.status = status;
    err.kind = error.kind;
    err.error = error;
    return err;
  }

  function send(method, path, body) {
    var headers = { authorization: "Bearer " + token };
    // On the app's custom domain: the anonymous visitor's pass, for their own store.
    if (config.visitor) headers["x-svc-visitor"] = config.visitor;
    if (body !== undefined) headers["content-type"] = "application/json";
    return fetch(appBase + path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
    }).then(
      function (res) {
        return res.text().then(function (text) {
          var parsed = null;
          try {
            parsed = text === "" ? null : JSON.parse(text);
          } catch (_) {
            parsed = null;
          }
          if (res.ok) return parsed;
          var error = parsed && parsed.error ? parsed.error : { kind: "http_error", message: "HTTP " + res.status };
          throw SvcError(res.status, error);
        });
      },
      function (cause) {
        throw SvcError(0, { kind: "network_error", message: String(cause && cause.message ? cause.message : cause) });
      },
    );
  }

  // Rotate well before the 7 days run out; the old token stays valid 15 minutes after.
  function scheduleRefresh() {
    var wait = Math.max(60000, Math.min(expiresAt - Date.now() - 3600000, 2147000000));
    setTimeout(function () {
      send("POST", "/render-token").then(
        function (fresh) {
          token = fresh.token;
          expiresAt = Date.parse(fresh.expiresAt);
          scheduleRefresh();
        },
        function () {
          setTimeout(scheduleRefresh, 60000);
        },
      );
    }, wait);
  }
  scheduleRefresh();

  function report(path, body) {
    if (reportsLeft <= 0) return;
    reportsLeft -= 1;
    send("POST", path, body).catch(function () {
      // Reporting must never itself raise an error on the page.
    });
  }

  function clip(text, max) {
    text = String(text == null ? "" : text);
    return text.length > max ? text.slice(0, max) : text;
  }

  window.addEventListener(
    "error",
    function (event) {
      var target = event.target;
      if (target && target !== window && target.tagName) {
        report("/load-error/report", { message: "failed to load <" + target.tagName.toLowerCase() + ">", url: clip(target.src || target.href, 1000) });
        return;
      }
      report("/diag/report", {
        message: clip(event.message, 2000),
        source: clip(event.filename, 500),
        line: event.lineno || 0,
        col: event.colno || 0,
        stack: clip(event.error && event.error.stack, 4000),
      });
    },
    true,
  );
  window.addEventListener("unhandledrejection", function (event) {
    var reason = event.reason;
    report("/diag/report", {
      message: clip("Unhandled rejection: " + (reason && reason.message ? reason.message : String(reason)), 2000),
      source: "",
      line: 0,
      col: 0,
      stack: clip(reason && reason.stack, 4000),
    });
  });

  window.svc = Object.freeze({
    appId: config.appId,
    /** Runs a declared operation; resolves with its value, rejects with an error carrying `kind`. */
    call: function (op, input) {
      return send("POST", "/api/" + encodeURIComponent(op), input === undefined ? {} : input).then(function (body) {
        return body.value;
      });
    },
    /** Live events: "hello", "revision" ({revision}), "data" ({keys}). */
    on: function (event, listener) {
      if (source === null) source = new EventSource(appBase + "/events?t=" + encodeURIComponent(token));
      source.addEventListener(event, function (message) {
        var data = null;
        try {
          data = JSON.parse(message.data);
        } catch (_) {
          data = message.data;
        }
        listener(data);
      });
    },
    /** A URL for one of the app's uploaded assets. */
    asset: function (key) {
      return appBase + "/assets/" + String(key).split("/").map(encodeURIComponent).join("/") + "?t=" + encodeURIComponent(token);
    },
    /** Sends feedback to the app's owner. */
    feedback: function (text, data) {
      var body = { text: String(text) };
      if (data !== undefined) body.structuredData = data;
      return send("POST", "/feedback", body);
    },
  });
})(__SVC_CONFIG__);
