// Adaptive Card JSON → the official `adaptivecards` renderer, in a Teams-like light chat.
// Teams' own CodeBlock element is not in that renderer; it is drawn here as Teams draws
// it (a language label over numbered lines), without syntax colours. Parse and validation
// problems are listed under the card, never hidden.
"use strict";

const AC = window.AdaptiveCards;
const problems = [];
const FONT = '"Segoe UI", "Noto Sans", "DejaVu Sans", sans-serif';
const MONO = 'Consolas, Menlo, "DejaVu Sans Mono", monospace';

function colors(defaultColor) {
  const pair = (c) => ({ default: c, subtle: c });
  return {
    default: { default: defaultColor, subtle: "#616161" },
    dark: pair("#242424"),
    light: pair("#ffffff"),
    accent: pair("#5b5fc7"),
    good: pair("#237b4b"),
    warning: pair("#835c00"),
    attention: pair("#c4314b"),
  };
}

const HOST_CONFIG = {
  supportsInteractivity: true,
  spacing: { small: 8, default: 12, medium: 16, large: 20, extraLarge: 24, padding: 16 },
  separator: { lineThickness: 1, lineColor: "#e0e0e0" },
  fontTypes: {
    default: {
      fontFamily: FONT,
      fontSizes: { small: 12, default: 14, medium: 16, large: 18, extraLarge: 24 },
      fontWeights: { lighter: 300, default: 400, bolder: 600 },
    },
    monospace: {
      fontFamily: MONO,
      fontSizes: { small: 12, default: 13, medium: 14, large: 16, extraLarge: 20 },
      fontWeights: { lighter: 300, default: 400, bolder: 600 },
    },
  },
  containerStyles: {
    default: { backgroundColor: "#ffffff", foregroundColors: colors("#242424") },
    emphasis: { backgroundColor: "#f5f5f5", foregroundColors: colors("#242424") },
  },
  actions: {
    maxActions: 6, spacing: "default", buttonSpacing: 8, actionsOrientation: "horizontal",
    actionAlignment: "left", showCard: { actionMode: "inline", inlineTopMargin: 8 },
  },
  factSet: {
    title: { weight: "bolder", wrap: true, maxWidth: 150 },
    value: { wrap: true },
    spacing: 10,
  },
};

class CodeBlock extends AC.CardElement {
  static codeSnippetProperty = new AC.StringProperty(AC.Versions.v1_0, "codeSnippet");
  static languageProperty = new AC.StringProperty(AC.Versions.v1_0, "language");
  static startLineNumberProperty = new AC.NumProperty(AC.Versions.v1_0, "startLineNumber");

  getJsonTypeName() {
    return "CodeBlock";
  }

  internalRender() {
    const box = document.createElement("div");
    box.className = "codeblock";
    const head = document.createElement("div");
    head.className = "codeblock-head";
    head.textContent = this.getValue(CodeBlock.languageProperty) || "PlainText";
    box.appendChild(head);
    const body = document.createElement("div");
    body.className = "codeblock-body";
    const first = this.getValue(CodeBlock.startLineNumberProperty) || 1;
    const lines = (this.getValue(CodeBlock.codeSnippetProperty) || "").split("\n");
    lines.forEach((line, i) => {
      const number = document.createElement("span");
      number.className = "codeblock-number";
      number.textContent = String(first + i);
      const code = document.createElement("span");
      code.className = "codeblock-line";
      code.textContent = line;
      body.append(number, code);
    });
    box.appendChild(body);
    return box;
  }
}
AC.GlobalRegistry.elements.register("CodeBlock", CodeBlock, AC.Versions.v1_0);

function renderCard(json) {
  const card = new AC.AdaptiveCard();
  card.hostConfig = new AC.HostConfig(HOST_CONFIG);
  const context = new AC.SerializationContext();
  card.parse(json, context);
  for (let i = 0; i < context.eventCount; i++) problems.push(`parse: ${context.getEventAt(i).message}`);
  const results = card.validateProperties();
  for (const event of results.validationEvents) problems.push(`validate: ${event.message}`);
  const element = card.render();
  if (!element) problems.push("the renderer returned nothing");
  return element;
}

function bubble(className, html) {
  const div = document.createElement("div");
  div.className = className;
  div.innerHTML = html;
  return div;
}

function esc(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function render(view) {
  const root = document.getElementById("root");
  if (view.question) {
    root.appendChild(bubble("mine", `<div class="time">10:41 AM</div><div class="text">${esc(view.question)}</div>`));
  }
  const message = bubble(
    "theirs",
    `<div class="avatar">ca</div><div class="content"><div class="head"><b>codeask</b><span class="time">10:42 AM</span></div></div>`,
  );
  const holder = document.createElement("div");
  holder.className = "card";
  const element = renderCard(view.payload);
  if (element) holder.appendChild(element);
  message.querySelector(".content").appendChild(holder);
  root.appendChild(message);
}

const view = JSON.parse(document.getElementById("view").textContent);
try {
  render(view);
} catch (err) {
  problems.push(String(err));
}
document.getElementById("problems").textContent = problems.join("\n");
window.previewReady = true;
