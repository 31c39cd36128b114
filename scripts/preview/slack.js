// Block Kit JSON → an approximation of Slack's desktop look, for `make preview`.
// Reads the view from <script id="view" type="application/json">; a block or element
// type it does not know is shown as a red "unsupported" box, never dropped silently.
"use strict";

const EMOJI = {
  "+1": "👍", thumbsup: "👍", "-1": "👎", thumbsdown: "👎", warning: "⚠️", lock: "🔒",
  mag: "🔍", white_check_mark: "✅", hourglass_flowing_sand: "⏳", x: "❌",
  information_source: "ℹ️", link: "🔗", books: "📚", memo: "📝", eyes: "👀", tada: "🎉",
  bulb: "💡", rocket: "🚀", wrench: "🔧", hourglass: "⌛", repeat: "🔁", gear: "⚙️",
};
const BULLETS = ["•", "◦", "▪"];
const problems = [];

function esc(text) {
  return String(text)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// Slack text arrives with &, < and > escaped as entities; show them as the characters.
function unentity(text) {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function emoji(html) {
  return html.replace(/:([a-z0-9_+-]+):/g, (m, name) => EMOJI[name] || m);
}

function unsupported(what) {
  problems.push(what);
  return `<div class="unsupported">unsupported: ${esc(what)}</div>`;
}

// --- mrkdwn ------------------------------------------------------------------------

function mrkdwnInline(text) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let s = text.replace(/`([^`\n]+)`/g, (m, code) => hold(`<code>${esc(unentity(code))}</code>`));
  s = s.replace(/<([^<>|\n]+)(?:\|([^<>\n]*))?>/g, (m, target, label) => {
    if (target.startsWith("@")) return hold(`<span class="mention">@${esc(label || target.slice(1))}</span>`);
    if (target.startsWith("#")) return hold(`<span class="mention">#${esc(label || target.slice(1))}</span>`);
    if (target.startsWith("!")) return hold(`<span class="mention">@${esc(label || target.slice(1).split("^")[0])}</span>`);
    const shown = label === undefined || label === "" ? target : label;
    return hold(`<a href="${esc(unentity(target))}">${emphasis(esc(unentity(shown)))}</a>`);
  });
  s = emphasis(esc(unentity(s)));
  s = emoji(s);
  return s.replace(/\u0000(\d+)\u0000/g, (m, i) => held[Number(i)]);
}

// *bold*, _italic_ and ~strike~ only where Slack sees them: at word boundaries, not
// around spaces (so "a * b * c" stays as written).
function emphasis(html) {
  const rule = (mark, tag) =>
    new RegExp(`(^|[^\\w${mark}])\\${mark}(?!\\s)([^${mark}\\n]*?[^\\s${mark}])\\${mark}(?![\\w${mark}])`, "g");
  for (const [mark, tag] of [["*", "b"], ["_", "i"], ["~", "s"]]) {
    let before;
    do {
      before = html;
      html = html.replace(rule(mark, tag), (m, lead, inner) => `${lead}<${tag}>${inner}</${tag}>`);
    } while (html !== before);
  }
  return html;
}

function mrkdwn(text) {
  const parts = text.split("```");
  const unclosed = parts.length % 2 === 0; // the last "```" opens nothing
  return parts.map((part, i) => {
    if (i % 2 === 1 && !(unclosed && i === parts.length - 1)) {
      return `<pre>${esc(unentity(part.replace(/^\n/, "").replace(/\n$/, "")))}</pre>`;
    }
    let plain = i % 2 === 1 ? "```" + part : part;
    if (i > 0) plain = plain.replace(/^\n/, "");
    if (i < parts.length - 1) plain = plain.replace(/\n$/, "");
    return mrkdwnLines(plain);
  }).join("");
}

function mrkdwnLines(text) {
  if (!text) return "";
  const html = [];
  let quote = [];
  const flush = () => {
    if (quote.length) html.push(`<blockquote>${quote.join("<br>")}</blockquote>`);
    quote = [];
  };
  const lines = text.split("\n");
  let plain = [];
  const flushPlain = () => {
    if (plain.length) html.push(`<div class="lines">${plain.join("<br>")}</div>`);
    plain = [];
  };
  for (const line of lines) {
    if (line.startsWith(">")) {
      flushPlain();
      quote.push(mrkdwnInline(line.slice(1).replace(/^ /, "")));
    } else {
      flush();
      plain.push(mrkdwnInline(line));
    }
  }
  flush();
  flushPlain();
  return html.join("");
}

function textObject(obj) {
  if (!obj) return "";
  if (obj.type === "mrkdwn") return mrkdwn(obj.text);
  if (obj.type === "plain_text") return obj.emoji === false ? esc(obj.text) : emoji(esc(obj.text));
  return unsupported(`text object ${obj.type}`);
}

// --- elements ----------------------------------------------------------------------

function element(el) {
  switch (el.type) {
    case "button": {
      const style = el.style ? ` ${el.style}` : "";
      return `<span class="button${style}">${textObject(el.text)}</span>`;
    }
    case "image":
      return `<img class="element-image" src="${esc(el.image_url)}" alt="${esc(el.alt_text || "")}">`;
    case "overflow":
      return `<span class="button overflow">⋮</span>`;
    case "static_select": case "external_select": case "users_select":
    case "conversations_select": case "channels_select":
      return `<span class="button select">${textObject(el.placeholder) || "Select"} ▾</span>`;
    case "datepicker":
      return `<span class="button select">${esc(el.initial_date || "Pick a date")} ▾</span>`;
    default:
      return unsupported(`element ${el.type}`);
  }
}

// --- rich_text -----------------------------------------------------------------------

function richInline(el) {
  const style = el.style || {};
  let html;
  switch (el.type) {
    case "text": html = esc(el.text).replace(/\n/g, "<br>"); break;
    case "link": html = `<a href="${esc(el.url)}">${esc(el.text || el.url)}</a>`; break;
    case "emoji": html = el.unicode ? String.fromCodePoint(...el.unicode.split("-").map((h) => parseInt(h, 16))) : (EMOJI[el.name] || `:${esc(el.name)}:`); break;
    case "user": html = `<span class="mention">@${esc(el.user_id)}</span>`; break;
    case "usergroup": html = `<span class="mention">@${esc(el.usergroup_id)}</span>`; break;
    case "channel": html = `<span class="mention">#${esc(el.channel_id)}</span>`; break;
    case "broadcast": html = `<span class="mention">@${esc(el.range)}</span>`; break;
    case "date": html = esc(el.fallback || el.format || ""); break;
    case "color": html = `<span class="swatch" style="background:${esc(el.value)}"></span>${esc(el.value)}`; break;
    default: return unsupported(`rich text element ${el.type}`);
  }
  if (style.code) html = `<code>${html}</code>`;
  if (style.bold) html = `<b>${html}</b>`;
  if (style.italic) html = `<i>${html}</i>`;
  if (style.strike) html = `<s>${html}</s>`;
  return html;
}

function richInlines(elements) {
  return (elements || []).map(richInline).join("");
}

function orderedMarker(n, indent) {
  if (indent % 3 === 1) return `${String.fromCharCode(96 + ((n - 1) % 26) + 1)}.`;
  if (indent % 3 === 2) return `${["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"][(n - 1) % 10]}.`;
  return `${n}.`;
}

function richElement(el) {
  switch (el.type) {
    case "rich_text_section":
      return `<div class="rich-section">${richInlines(el.elements)}</div>`;
    case "rich_text_preformatted":
      return `<pre>${richInlines(el.elements)}</pre>`;
    case "rich_text_quote":
      return `<blockquote>${richInlines(el.elements)}</blockquote>`;
    case "rich_text_list": {
      const indent = el.indent || 0;
      const items = (el.elements || []).map((item, i) => {
        const marker = el.style === "ordered"
          ? orderedMarker((el.offset || 0) + i + 1, indent)
          : BULLETS[indent % BULLETS.length];
        return `<li><span class="marker">${marker}</span><span>${richInlines(item.elements)}</span></li>`;
      });
      const border = el.border ? " bordered" : "";
      return `<ul class="rich-list${border}" style="margin-left:${indent * 22}px">${items.join("")}</ul>`;
    }
    default:
      return unsupported(`rich text block ${el.type}`);
  }
}

// --- blocks --------------------------------------------------------------------------

function markdownBlock(text) {
  const md = window.markdownit({ html: false, linkify: false, breaks: false });
  return md.render(text);
}

function block(b) {
  switch (b.type) {
    case "section": {
      const text = b.text ? `<div class="text">${textObject(b.text)}</div>` : "";
      const fields = b.fields
        ? `<div class="fields">${b.fields.map((f) => `<div>${textObject(f)}</div>`).join("")}</div>`
        : "";
      const accessory = b.accessory ? `<div class="accessory">${element(b.accessory)}</div>` : "";
      return `<div class="block section"><div class="main">${text}${fields}</div>${accessory}</div>`;
    }
    case "context":
      return `<div class="block context">${b.elements
        .map((e) => (e.type === "image" ? element(e) : `<span class="item">${textObject(e)}</span>`))
        .join("")}</div>`;
    case "divider":
      return `<hr class="block divider">`;
    case "header":
      return `<div class="block header">${textObject(b.text)}</div>`;
    case "actions":
      return `<div class="block actions">${b.elements.map(element).join("")}</div>`;
    case "image":
      return `<div class="block image">${b.title ? `<div class="title">${textObject(b.title)}</div>` : ""}<img src="${esc(b.image_url)}" alt="${esc(b.alt_text || "")}"></div>`;
    case "rich_text":
      return `<div class="block rich-text">${b.elements.map(richElement).join("")}</div>`;
    case "markdown":
      return `<div class="block markdown">${markdownBlock(b.text)}</div>`;
    default:
      return `<div class="block">${unsupported(`block ${b.type}`)}</div>`;
  }
}

function blocks(list) {
  return list.map(block).join("");
}

// --- frames ----------------------------------------------------------------------------

const BOT = `<div class="avatar bot">ca</div>`;

function message({ avatar, name, app, body, note, continued }) {
  const head = continued
    ? ""
    : `<div class="head"><b>${esc(name)}</b>${app ? '<span class="app">APP</span>' : ""}<span class="time">10:42 AM</span></div>`;
  const noteHtml = note ? `<div class="note">👁 ${esc(note)}</div>` : "";
  return `${noteHtml}<div class="message${continued ? " continued" : ""}">
    <div class="gutter">${continued ? "" : avatar}</div>
    <div class="content">${head}${body}</div></div>`;
}

function render(view) {
  const root = document.getElementById("root");
  if (view.kind === "home") {
    root.innerHTML = `<div class="tabs"><span class="tab on">Home</span><span class="tab">Messages</span><span class="tab">About</span></div>
      <div class="home">${blocks(view.payload.blocks)}</div>`;
    return;
  }
  const html = [];
  if (view.question) {
    html.push(message({
      avatar: `<div class="avatar person">MK</div>`, name: "Maria K", app: false,
      body: `<div class="block section"><div class="main"><div class="text"><div class="lines"><span class="mention">@codeask</span> ${esc(view.question)}</div></div></div></div>`,
    }));
  }
  view.payload.forEach((m, i) => {
    html.push(message({
      avatar: BOT, name: "codeask", app: true, body: blocks(m.blocks),
      note: i === 0 ? view.note : "", continued: i > 0,
    }));
  });
  root.innerHTML = html.join("");
}

const view = JSON.parse(document.getElementById("view").textContent);
try {
  render(view);
} catch (err) {
  problems.push(String(err));
}
document.getElementById("problems").textContent = problems.join("\n");
window.previewReady = true;
