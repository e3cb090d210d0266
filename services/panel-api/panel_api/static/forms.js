// @ts-check
// Forms and action buttons. A refused form shows each problem beside its field, in the page's
// language, and moves the focus to the first; a destructive action asks first; a write that
// went through says so.
import { ApiProblem } from "./api.js";
import { element, notice, problemText, show, wordChoices, words } from "./dom.js";
import { asciiNumber, fromPersian, latinDigits, localDigits, toPersian } from "./format.js";
import { has, language, t } from "./i18n.js";
import { reload } from "./router.js";

/**
 * @typedef {object} Field
 * @property {string} name the API's field name, so an answer's `errors` find it
 * @property {string} label the key of its words
 * @property {string} [labelText] its label as it is (a channel's title), instead of `label`
 * @property {string} [type] an input type, "amount" (a decimal in either script, sent in ASCII),
 *   "textarea", "checkbox" (value "true" or "") or
 *   "checks" (a box per choice; the value is the chosen values joined by commas)
 * @property {string[]} [options] a select's values (each a key of words, unless `plain`)
 * @property {boolean} [plain] show the options as they are, not as words
 * @property {Array<{ value: string, text: string }>} [choices] a select's or the boxes' values, each
 *   with its text as it is (a bot's username)
 * @property {string} [value]
 * @property {boolean} [required]
 * @property {string} [hint] the key of a line under the field
 * @property {string} [autocomplete]
 * @property {boolean} [ltr] written left to right whatever the page's language (an address)
 * @property {[string, string[]]} [showIf] shown only while the field named first has one of
 *   these values (a file's id only for a file)
 */

/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Input */

/**
 * What a field is on the page: `node` to place, `read` its value, `target` where the focus and
 * the invalid mark go, `problem` a code when what was typed cannot be sent.
 * @typedef {{ node: HTMLElement, read: () => string, target: HTMLElement, listen: (run: () => void) => void, problem?: () => string | null }} Control
 */

let made = 0;

/**
 * A day in the Persian calendar, for a page in Persian: day, month by name and year, read as
 * the Gregorian YYYY-MM-DD the API takes (Chromium's own picker knows only the Gregorian).
 * @param {Field} field @param {string} id @returns {Control}
 */
function persianDate(field, id) {
  const [year, month, day] = field.value ? toPersian(field.value) : toPersian(new Date().toISOString().slice(0, 10));
  const dayBox = element("input", { id, name: `${field.name}-day`, inputmode: "numeric", size: "2", "aria-label": t("dayOfMonth") });
  if (field.value) /** @type {HTMLInputElement} */ (dayBox).value = localDigits("fa", String(day));
  const months = element("select", { name: `${field.name}-month`, "aria-label": t("month") },
    ...Array.from({ length: 12 }, (_, n) => element("option", {
      value: String(n + 1),
      text: new Intl.DateTimeFormat("fa-u-ca-persian", { month: "long", timeZone: "UTC" })
        .format(new Date(`${fromPersian(1405, n + 1, 1)}T12:00:00Z`)),
    })));
  /** @type {HTMLSelectElement} */ (months).value = String(month);
  const yearBox = element("input", { name: `${field.name}-year`, inputmode: "numeric", size: "4", "aria-label": t("year") });
  /** @type {HTMLInputElement} */ (yearBox).value = new Intl.NumberFormat("fa", { useGrouping: false }).format(year);
  const node = element("span", { class: "persian-date", role: "group", "data-date": field.name }, dayBox, months, yearBox);
  const parts = () => [yearBox, months, dayBox].map((n) => latinDigits(/** @type {HTMLInputElement} */ (n).value.trim()));
  const read = () => {
    const [y, m, d] = parts();
    if (!d) return "";
    return fromPersian(Number(y), Number(m), Number(d)) ?? `${y}-${m}-${d}`;
  };
  return {
    node, target: dayBox, read,
    listen: (run) => node.addEventListener("change", run),
    problem: () => {
      const [y, m, d] = parts();
      return !d || fromPersian(Number(y), Number(m), Number(d)) ? null : "no-such-day";
    },
  };
}

/** @param {Field} field @param {string} id @returns {Control} */
function controlOf(field, id) {
  const { name, type = "text", options, plain = false, choices, value = "", required = false, autocomplete } = field;
  if (type === "date" && language() === "fa") return persianDate(field, id);
  if (type === "checks") {
    const chosen = new Set(value.split(",").filter(Boolean));
    const boxes = (choices ?? []).map((choice) => {
      const box = /** @type {HTMLInputElement} */ (element("input", { type: "checkbox", name, value: choice.value }));
      box.checked = chosen.has(choice.value);
      return box;
    });
    const node = element("fieldset", { id, class: "checks" },
      element("legend", { text: field.labelText ?? t(field.label), ...(field.labelText ? {} : { "data-text": field.label }) }),
      ...boxes.map((box, n) => element("label", {}, box, " ", element("span", { text: choices?.[n].text ?? "" }))));
    return {
      node, target: node,
      read: () => boxes.filter((b) => b.checked).map((b) => b.value).join(","),
      listen: (run) => boxes.forEach((b) => b.addEventListener("change", run)),
    };
  }
  /** @type {Input} */
  let input;
  if (options || choices) {
    const select = document.createElement("select");
    const listed = choices ?? (plain ? (options ?? []).map((o) => ({ value: o, text: o })) : wordChoices(options ?? []));
    select.append(...listed.map((o) => element("option", { value: o.value, text: o.text })));
    select.value = value || listed[0]?.value || "";
    input = select;
  } else if (type === "textarea") {
    input = document.createElement("textarea");
    input.rows = 4;
    // A message in either script reads in its own direction.
    input.dir = "auto";
    input.value = value;
  } else {
    const box = document.createElement("input");
    // A number is typed into a text box with the digit keyboard: a number box takes Latin
    // digits only, and a Persian keyboard types Persian ones (the view reads both).
    box.type = type === "number" || type === "amount" ? "text" : type;
    if (type === "checkbox") box.checked = value === "true";
    // A number the form starts with, in the page's own digits.
    else box.value = type === "number" || type === "amount" ? localDigits(language(), value) : value;
    if (type === "number") box.inputMode = "numeric";
    if (type === "amount") box.inputMode = "decimal";
    input = box;
  }
  input.id = id;
  input.name = name;
  input.required = required;
  if (field.ltr) input.dir = "ltr";
  if (autocomplete) input.autocomplete = /** @type {AutoFill} */ (autocomplete);
  const read = type === "checkbox"
    ? () => (/** @type {HTMLInputElement} */ (input).checked ? "true" : "")
    // A number or an amount goes out in ASCII, whichever digits it was typed in.
    : type === "number" || type === "amount" ? () => asciiNumber(input.value.trim())
    // A password is taken as typed; other values without the spaces around them.
    : () => (type === "password" ? input.value : input.value.trim());
  return { node: input, target: input, read, listen: (run) => input.addEventListener("change", run) };
}

/** @param {Field} field @param {string} forId */
function labelOf(field, forId) {
  if (field.labelText) return element("label", { for: forId, text: field.labelText });
  return words("label", field.label, { for: forId });
}

/**
 * A form of labelled fields. `submit(values)` does the write; then `then` runs (by default the
 * view is drawn again) and what `submit` returned (a notice's text, or a node such as a link
 * to copy) is shown above the form, or under the view's heading when the form is gone.
 * @param {string} id
 * @param {Field[]} fields
 * @param {string} submitKey
 * @param {(values: Record<string, string>) => Promise<string | Node | void>} submit
 * @param {{ then?: () => Promise<void>, stay?: boolean, refusals?: Record<string, [string, string]>, fieldOf?: (field: string) => string | undefined }} [options]
 *   `stay`: a form in a dialog stays open after a write (a test message, then the real send);
 *   `refusals`: a problem's slug that is about one field, as that field and a code (a channel
 *   Telegram does not know is the `chat` field's `not-found`); `fieldOf`: the form's field a
 *   refused path of the body belongs to, where its name does not say (`channels[2].join_url`)
 */
export function formOf(id, fields, submitKey, submit, { then = reload, stay = false, refusals = {}, fieldOf = () => undefined } = {}) {
  /** @type {Record<string, Control>} */
  const controls = {};
  /** @type {Record<string, HTMLElement>} */
  const problems = {};
  /** @type {Record<string, HTMLElement>} */
  const rows = {};
  for (const field of fields) {
    const controlId = `f${++made}`;
    const control = controlOf(field, controlId);
    const problemId = `${controlId}-problem`;
    control.target.setAttribute("aria-describedby", problemId);
    controls[field.name] = control;
    problems[field.name] = element("span", { class: "field-problem", id: problemId, "data-problem": field.name });
    const hint = field.hint ?? (has(`hint.${field.name}`) ? `hint.${field.name}` : null);
    const hintNode = hint ? [words("span", hint, { class: "hint" })] : [];
    rows[field.name] = field.type === "checks"
      ? element("div", { class: "field" }, control.node, ...hintNode, problems[field.name])
      : field.type === "checkbox"
        ? element("div", { class: "field check" }, element("span", {}, control.node, " ", labelOf(field, controlId)), ...hintNode, problems[field.name])
        : element("div", { class: "field" }, labelOf(field, controlId), control.node, ...hintNode, problems[field.name]);
  }
  // A field that applies to some choices only (a file's id to a file) shows with them.
  const shown = () => {
    for (const field of fields) {
      if (field.showIf) rows[field.name].hidden = !field.showIf[1].includes(controls[field.showIf[0]].read());
    }
  };
  for (const field of fields) {
    if (field.showIf) controls[field.showIf[0]].listen(shown);
  }
  shown();
  const button = words("button", submitKey, { type: "submit" });
  // A refusal about no one field: in the form when it sits in a dialog over the page (the
  // page's own message line is behind it), else in that line.
  const refused = element("p", { class: "form-problem", role: "alert", id: `${id}-refused`, hidden: "" });
  const form = element("form", { id, novalidate: "" }, ...fields.map((f) => rows[f.name]), refused, button);
  /** @param {unknown} error */
  const said = (error) => {
    if (!form.closest("dialog")) {
      show(error);
      return;
    }
    refused.textContent = error ? problemText(error) : "";
    refused.hidden = !error;
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // What the last write said is not about this one: a refusal must not stand beside it.
    document.getElementById(`${id}-done`)?.remove();
    said(null);
    for (const [name, control] of Object.entries(controls)) {
      control.target.removeAttribute("aria-invalid");
      problems[name].textContent = "";
    }
    const values = Object.fromEntries(Object.entries(controls)
      .filter(([name]) => !rows[name].hidden)
      .map(([name, control]) => [name, control.read()]));
    const missing = fields.filter((f) => !rows[f.name].hidden)
      .map((f) => ({ field: f.name, code: f.required && !values[f.name] ? "required" : controls[f.name].problem?.() }))
      .filter(/** @returns {p is { field: string, code: string }} */ (p) => Boolean(p.code));
    if (missing.length) {
      mark(missing);
      return;
    }
    button.setAttribute("disabled", "");
    try {
      const answer = await submit(values);
      if (!stay) form.closest("dialog")?.close();
      await then();
      if (answer) {
        const done = notice(answer, `${id}-done`);
        // Beside the form while it is in sight; under the view's heading once it is gone or
        // shut in its dialog.
        const place = document.getElementById(id);
        if (place && (!place.closest("dialog") || place.closest("dialog[open]"))) place.before(done); else document.querySelector("#view h1")?.after(done);
      }
    } catch (error) {
      if (!(error instanceof ApiProblem && mark(fieldsOf(error)))) said(error);
    } finally {
      button.removeAttribute("disabled");
    }
  });

  /** The fields a refusal is about: those it names, or the one its slug is about.
   * @param {ApiProblem} error */
  function fieldsOf(error) {
    const about = refusals[error.slug];
    return about ? [{ field: about[0], code: about[1] }] : error.errors;
  }

  /** @param {{ field: string, code: string }[]} errors @returns {boolean} whether one was shown */
  function mark(errors) {
    /** @type {HTMLElement | null} */
    let first = null;
    for (const { field, code } of errors) {
      // `plan.price` and `ids[3]` belong to the form's `price` and `ids`.
      const name = [fieldOf(field) ?? "", field, field.split(".").pop() ?? "", field.split(/[.[]/)[0]].find((n) => n in controls);
      if (!name) continue;
      const target = controls[name].target;
      target.setAttribute("aria-invalid", "true");
      problems[name].textContent = t(`e.${code}`);
      first ??= target;
    }
    if (!first) return false;
    said(null);
    if (first instanceof HTMLFieldSetElement) first.querySelector("input")?.focus(); else first.focus();
    return true;
  }
  return form;
}

/**
 * A button for one write on a row; the view is drawn again once it is done. A destructive one
 * (`confirm`) asks first, in place.
 * @param {string} key
 * @param {() => Promise<unknown>} run
 * @param {{ confirm?: boolean }} [options]
 */
export function actionButton(key, run, { confirm = false } = {}) {
  const button = words("button", key, { type: "button", "data-action": key });
  const act = async () => {
    try {
      await run();
      await reload();
    } catch (error) {
      show(error);
      button.removeAttribute("disabled");
    }
  };
  button.addEventListener("click", () => {
    if (!confirm) {
      button.setAttribute("disabled", "");
      act();
      return;
    }
    const yes = element("button", { type: "button", class: "danger", "data-confirm": key, text: t("confirmYes") });
    const no = words("button", "keep", { type: "button" });
    const asking = element("span", { class: "asking", role: "group" },
      element("span", { text: t("sure") }), yes, no);
    yes.addEventListener("click", () => { yes.setAttribute("disabled", ""); act(); });
    no.addEventListener("click", () => { asking.replaceWith(button); button.focus(); });
    button.replaceWith(asking);
    no.focus();
  });
  return button;
}

/**
 * A button that opens `form()` in a row under its own, to change the item in place; pressed
 * again, it closes it.
 * @param {string} key @param {() => HTMLElement} form
 */
export function editRow(key, form) {
  const button = words("button", key, { type: "button", "data-action": key, "aria-expanded": "false" });
  /** @type {HTMLElement | null} */
  let opened = null;
  button.addEventListener("click", () => {
    if (opened) {
      opened.remove();
      opened = null;
      button.setAttribute("aria-expanded", "false");
      return;
    }
    const row = button.closest("tr");
    opened = element("tr", { class: "editing" }, element("td", { colspan: String(row?.children.length ?? 1) }, form()));
    row?.after(opened);
    button.setAttribute("aria-expanded", "true");
    const first = opened.querySelector("input, select, textarea");
    if (first instanceof HTMLElement) first.focus();
  });
  return button;
}

/**
 * A list page's one way to create: a button that opens `form` in a dialog over the list, so
 * the page opens on what there is. Escape or the close button shuts it and gives the focus
 * back to the button; a write that went through shuts it and draws the view again.
 * @param {string} key the words of the button and of the dialog's heading
 * @param {HTMLElement} form
 */
export function adding(key, form) {
  const headingId = `f${++made}`;
  const close = element("button", { type: "button", class: "close", "aria-label": t("closeDialog"), text: "×" });
  const dialog = /** @type {HTMLDialogElement} */ (element("dialog", { "aria-labelledby": headingId, "data-dialog": form.id },
    element("div", { class: "dialog-head" }, words("h2", key, { id: headingId }), close), form));
  const open = words("button", key, { type: "button", class: "primary", "data-opens": form.id, "aria-haspopup": "dialog" });
  open.addEventListener("click", () => {
    dialog.showModal();
    const first = form.querySelector("input:not([type=hidden]), select, textarea");
    if (first instanceof HTMLElement) first.focus();
  });
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => { if (open.isConnected) open.focus(); });
  return element("div", { class: "adding" }, open, dialog);
}
