// @ts-check
// Campaigns: a named invite link per sponsor or ad, who joined through it and who of them left,
// and each campaign's own page with its days.
import { call, may } from "../api.js";
import { element, words } from "../dom.js";
import { adding, formOf } from "../forms.js";
import { number, t } from "../i18n.js";
import { listView } from "../list.js";
import { botChoices, channelChoices, copyable, everything, when } from "./common.js";
import { lineChart } from "./charts.js";

/** The warning a public channel's campaign carries, or nothing. @param {{ public: boolean }} c */
function publicNote(c) {
  return c.public ? [words("p", "publicChannel", { class: "warning", "data-warning": "public" })] : [];
}

/** @param {URL} url */
export async function campaigns(url) {
  const editor = may("editor");
  const [bots, channelList] = await Promise.all([everything("/v1/bots"), everything("/v1/channels")]);
  const before = [];
  if (editor) {
    const usable = botChoices(bots);
    before.push(!usable.length
      ? words("p", "addBotFirst", { class: "empty" })
      : !channelList.length
        ? words("p", "addChannelFirst", { class: "empty" })
        : adding("addCampaign", formOf("add-campaign", [
          { name: "name", label: "campaignName", required: true, hint: "hint.campaign_name" },
          { name: "bot_id", label: "bot", choices: usable },
          { name: "channel_id", label: "channel", choices: channelChoices(channelList) },
        ], "add", async (v) => {
          const made = await call("POST", "/v1/campaigns", { name: v.name, bot_id: Number(v.bot_id), channel_id: Number(v.channel_id) });
          return element("span", {}, t("campaignMade", { link: made.invite_link }), ...publicNote(made));
        })));
  }
  return listView(url, {
    id: "campaigns", path: "/v1/campaigns", before,
    filters: [
      { name: "channel", label: "channel", choices: channelChoices(channelList) },
      { name: "bot", label: "bot", choices: botChoices(bots, { removed: true }) },
    ],
    columns: [
      { label: "name", sort: "name", value: (c) => element("a", { href: `/campaigns/${c.id}`, text: c.name }) },
      { label: "channel", value: (c) => element("span", {}, element("bdi", { text: c.channel_title }),
        ...(c.public ? [" ", element("span", { "data-warning": "public", title: t("publicChannel"), text: "⚠" })] : [])) },
      { label: "bot", value: (c) => element("bdi", { dir: "ltr", text: "@" + c.bot_username }) },
      { label: "link", value: (c) => copyable(c.invite_link) },
      { label: "joins", sort: "joins", value: (c) => number(c.joins) },
      { label: "leaves", value: (c) => number(c.leaves) },
      { label: "net", sort: "net", value: (c) => number(c.net) },
      { label: "created", sort: "created_at", value: (c) => when(c.created_at) },
    ],
  });
}

/** One campaign: its link and counts, and its joins and leaves per day.
 * @param {URL} _url @param {number} id */
export async function campaign(_url, id) {
  const { campaign: c, days } = await call("GET", `/v1/campaigns/${id}`);
  const facts = element("dl", { class: "facts", id: "campaign-facts" },
    words("dt", "channel"), element("dd", {}, element("bdi", { text: c.channel_title })),
    words("dt", "bot"), element("dd", {}, element("bdi", { dir: "ltr", text: "@" + c.bot_username })),
    words("dt", "link"), element("dd", {}, copyable(c.invite_link)),
    words("dt", "joins"), element("dd", { "data-figure": "joins", text: number(c.joins) }),
    words("dt", "leaves"), element("dd", { "data-figure": "leaves", text: number(c.leaves) }),
    words("dt", "net"), element("dd", { "data-figure": "net", text: number(c.net) }),
    words("dt", "created"), element("dd", { text: when(c.created_at) ?? "" }));
  const dayNames = days.map((/** @type {{ day: string }} */ d) => d.day);
  /** @param {"joins" | "leaves"} key */
  const line = (key) => {
    /** @type {number[]} */
    const values = days.map((/** @type {Record<string, number>} */ d) => d[key]);
    return { name: t(key), key, values, total: number(values.reduce((a, b) => a + b, 0)) };
  };
  const moved = days.some((/** @type {{ joins: number, leaves: number }} */ d) => d.joins || d.leaves);
  return [
    element("h2", { text: c.name }), facts, ...publicNote(c),
    words("h3", "campaignDays", { id: "campaign-days-heading" }),
    lineChart("campaign-days", "campaign-days-heading", dayNames, moved ? [line("joins"), line("leaves")] : [], "noCampaignJoins"),
    element("p", {}, words("a", "toCampaigns", { href: "/campaigns" })),
  ];
}
