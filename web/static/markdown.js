// Answers as markdown: the one renderer of every page that shows a seat's answer (Ask, a panel, a
// route conversation, To judge). It builds DOM nodes and sets only text (never innerHTML), so HTML
// and script in an answer are shown as the text they are. Links keep only http(s) addresses.
//   bw.markdown(text) -> a DocumentFragment
//   <div class="answer" data-markdown>text</div> (the server's escaped text) is rendered on load and
//   after every live refresh; without JavaScript it stays readable text.
"use strict";
(() => {
  const bw = window.bw;
  const { el } = bw;

  // code spans, **strong**, __strong__, *em*, _em_ (underscores never inside a word: window.__x__), [links](http…)
  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*(\S(?:[^*]*?\S)?)\*\*|(?<!\w)__(\S(?:[^_]*?\S)?)__(?!\w)|\*([^*\s](?:[^*]*[^*\s])?)\*|(?<!\w)_([^_\s](?:[^_]*[^_\s])?)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)/g;

  const inline = (text) => {
    const out = [];
    let at = 0;
    for (const m of text.matchAll(INLINE)) {
      if (m.index > at) out.push(text.slice(at, m.index));
      if (m[1]) out.push(el("code", { text: m[2].trim() }));
      else if (m[3] || m[4]) out.push(el("strong", {}, inline(m[3] || m[4])));
      else if (m[5] || m[6]) out.push(el("em", {}, inline(m[5] || m[6])));
      else if (/^https?:\/\//i.test(m[8])) out.push(el("a", { href: m[8], rel: "noopener noreferrer nofollow" }, inline(m[7])));
      else out.push(m[0]);
      at = m.index + m[0].length;
    }
    if (at < text.length) out.push(text.slice(at));
    return out;
  };

  const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;
  const ROW = /^\s*\|.*\|\s*$/;
  const DIVIDER = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  const cells = (line) => line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());

  const list = (lines, start) => {
    // consecutive items and their continuation lines; an item indented two or more past the one
    // above starts a list inside it
    const roots = [];
    const stack = [];
    let i = start;
    for (; i < lines.length; i++) {
      const line = lines[i];
      const m = line.match(ITEM);
      if (!m) {
        if (!line.trim() || !stack.length || FENCE.test(line) || HEADING.test(line)) break;
        stack[stack.length - 1].last.append(" ", ...inline(line.trim()));
        continue;
      }
      const indent = m[1].replace(/\t/g, "    ").length;
      while (stack.length && indent < stack[stack.length - 1].indent) stack.pop();
      let top = stack[stack.length - 1];
      if (!top || indent >= top.indent + 2) {
        const ordered = /\d/.test(m[2]);
        const node = el(ordered ? "ol" : "ul");
        const first = Number.parseInt(m[2], 10);
        if (ordered && first !== 1) node.setAttribute("start", String(first));
        if (top) top.last.append(node); else roots.push(node);
        top = { indent, node, last: null };
        stack.push(top);
      }
      top.last = el("li", {}, inline(m[3]));
      top.node.append(top.last);
    }
    return [roots, i];
  };

  const blocks = (text) => {
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let para = [];
    const flush = () => {
      if (para.length) out.push(el("p", {}, inline(para.join(" "))));
      para = [];
    };
    for (let i = 0; i < lines.length;) {
      const line = lines[i];
      let m;
      if (!line.trim()) { flush(); i++; continue; }
      if ((m = line.match(FENCE))) {
        flush();
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
        i++;
        out.push(el("pre", {}, el("code", { text: body.join("\n"), "data-lang": m[2] || null })));
        continue;
      }
      if ((m = line.match(HEADING))) {
        flush();
        out.push(el(`h${Math.min(6, m[1].length + 3)}`, {}, inline(m[2])));
        i++;
        continue;
      }
      if (RULE.test(line)) { flush(); out.push(el("hr")); i++; continue; }
      if (ITEM.test(line) && (!para.length || !/^\s/.test(line))) {
        flush();
        const [nodes, next] = list(lines, i);
        out.push(...nodes);
        i = next;
        continue;
      }
      if (QUOTE.test(line)) {
        flush();
        const quoted = [];
        for (; i < lines.length && (m = lines[i].match(QUOTE)); i++) quoted.push(m[1]);
        out.push(el("blockquote", {}, blocks(quoted.join("\n"))));
        continue;
      }
      if (ROW.test(line) && i + 1 < lines.length && DIVIDER.test(lines[i + 1])) {
        flush();
        const head = el("tr", {}, cells(line).map((c) => el("th", { scope: "col" }, inline(c))));
        const body = [];
        for (i += 2; i < lines.length && ROW.test(lines[i]); i++) {
          body.push(el("tr", {}, cells(lines[i]).map((c) => el("td", {}, inline(c)))));
        }
        out.push(el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), el("tbody", {}, body))));
        continue;
      }
      para.push(line.trim());
      i++;
    }
    flush();
    return out;
  };

  bw.markdown = (text) => {
    const fragment = document.createDocumentFragment();
    fragment.append(...blocks(String(text || "")));
    return fragment;
  };

  // an answer the server wrote as text, rendered in place (once)
  bw.renderAnswers = (root = document) => {
    for (const node of root.querySelectorAll("[data-markdown]:not([data-rendered])")) {
      node.replaceChildren(bw.markdown(node.textContent));
      node.dataset.rendered = "";
      node.classList.add("md");
    }
  };
  document.addEventListener("DOMContentLoaded", () => bw.renderAnswers());
  document.addEventListener("bw:refreshed", () => bw.renderAnswers());
})();
