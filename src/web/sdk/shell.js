// The app shell's own script (copy prompt, feedback form). It runs on this origin, outside the
// app's sandboxed frame, and sends feedback with the page's render token, never with cookies.
(function (config) {
  "use strict";
  var status = document.getElementById("feedback-status");
  document.getElementById("copy-prompt").addEventListener("click", function () {
    navigator.clipboard.writeText(config.prompt).catch(function () {
      window.prompt("Copy this prompt", config.prompt);
    });
  });
  document.getElementById("feedback-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var form = event.currentTarget;
    fetch(config.feedbackUrl, {
      method: "POST",
      headers: { authorization: "Bearer " + config.token, "content-type": "application/json" },
      body: JSON.stringify({ text: form.elements.namedItem("text").value }),
      credentials: "omit",
    }).then(
      function (res) {
        status.textContent = res.ok ? "Thanks, sent." : "Could not send it; try again later.";
        if (res.ok) form.reset();
      },
      function () {
        status.textContent = "Could not send it; check your connection.";
      },
    );
  });
})(__SVC_SHELL__);
