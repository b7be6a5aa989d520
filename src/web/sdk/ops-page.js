// The generated page of an app without a `ui` script: one form per declared operation, built
// from its input schema, calling it through window.svc.
(function (operations) {
  "use strict";
  var root = document.getElementById("app");

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) {
      node.appendChild(child);
    });
    return node;
  }

  function fieldFor(opId, name, schema, required) {
    var id = "f-" + opId + "-" + name;
    var label = el("label", { for: id, text: name + (required ? " *" : "") });
    var input;
    if (Array.isArray(schema.enum)) {
      input = el("select", { id: id, name: name });
      schema.enum.forEach(function (value) {
        input.appendChild(el("option", { value: JSON.stringify(value), text: String(value) }));
      });
      input.dataset.kind = "enum";
    } else if (schema.type === "boolean") {
      input = el("input", { id: id, name: name, type: "checkbox" });
      input.dataset.kind = "boolean";
    } else if (schema.type === "integer" || schema.type === "number") {
      input = el("input", { id: id, name: name, type: "number", step: schema.type === "integer" ? "1" : "any" });
      input.dataset.kind = "number";
    } else if (schema.type === "string") {
      input = el("input", { id: id, name: name, type: "text" });
      input.dataset.kind = "string";
    } else {
      input = el("textarea", { id: id, name: name, rows: "3", placeholder: "JSON" });
      input.dataset.kind = "json";
    }
    if (required && input.dataset.kind !== "boolean") input.required = true;
    if (schema.description) input.title = schema.description;
    return el("div", { class: "field" }, [label, input]);
  }

  function readForm(form) {
    var input = {};
    Array.prototype.forEach.call(form.querySelectorAll("[data-kind]"), function (field) {
      var kind = field.dataset.kind;
      if (kind === "boolean") input[field.name] = field.checked;
      else if (field.value === "") return;
      else if (kind === "number") input[field.name] = Number(field.value);
      else if (kind === "enum" || kind === "json") input[field.name] = JSON.parse(field.value);
      else input[field.name] = field.value;
    });
    return input;
  }

  root.appendChild(el("h1", { text: document.title }));
  if (operations.length === 0) root.appendChild(el("p", { text: "This app declares no operations." }));
  operations.forEach(function (op) {
    var schema = op.input && typeof op.input === "object" ? op.input : {};
    var props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
    var required = Array.isArray(schema.required) ? schema.required : [];
    var output = el("pre", { class: "result", "aria-live": "polite" });
    var fields = Object.keys(props).map(function (name) {
      return fieldFor(op.id, name, props[name] || {}, required.indexOf(name) >= 0);
    });
    var button = el("button", { type: "submit", text: "Run " + op.id });
    var form = el("form", { "data-op": op.id }, fields.concat([button]));
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var input;
      try {
        input = readForm(form);
      } catch (error) {
        output.textContent = "Invalid JSON: " + error.message;
        return;
      }
      output.textContent = "…";
      window.svc.call(op.id, input).then(
        function (value) {
          output.textContent = JSON.stringify(value, null, 2);
        },
        function (error) {
          output.textContent = (error.kind || "error") + ": " + error.message;
        },
      );
    });
    root.appendChild(
      el("section", { class: "op" }, [
        el("h2", { text: op.title || op.id }),
        el("p", { class: "meta", text: (op.access === "read" ? "read" : "write") + (op.description ? " · " + op.description : "") }),
        form,
        output,
      ]),
    );
  });
})(__SVC_OPERATIONS__);
