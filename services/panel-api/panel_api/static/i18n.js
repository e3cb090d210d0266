// @ts-check
// The page's words in English and Persian; numbers, money and dates through format.js for the
// language. A node test holds the two languages to the same keys.
import { formatDateTime, formatDay, formatMoney, formatNumber } from "./format.js";

/** @type {Record<string, Record<string, string>>} */
export const WORDS = {
  en: {
    brand: "Gatehouse", language: "Language", signIn: "Sign in", signOut: "Sign out",
    email: "Email", password: "Password", signedInAs: "Signed in as {email} ({role})",
    bots: "Bots", workspace: "Workspace", wait: "Try again in {seconds} s.",
    unreachable: "The panel API could not be reached.",
    dashboard: "Dashboard", firstStart: "First start? Create the owner", setUp: "Create the owner",
    setupCode: "Setup code (printed by panel-api)", backToSignIn: "Back to sign-in",
    addBot: "Add a bot", token: "Bot token", mode: "Mode", add: "Add", username: "Username",
    status: "Status", lastError: "Last error", none: "none",
    timeZone: "Time zone", tronAddress: "Shop's TRON address", save: "Save", saved: "Saved.",
    channels: "Channels", contents: "Content", people: "People", memberships: "Memberships",
    invoices: "Invoices", payments: "Payments", accessEvents: "Access", orders: "Ad orders",
    deadUpdates: "Dead updates", team: "Team", audit: "Audit log", all: "All", more: "More",
    nothing: "Nothing here yet.", title: "Title", paid: "paid", rights: "Bot's rights",
    yes: "yes", no: "no", notAdmin: "the bot is not an admin there", code: "Code", kind: "Kind",
    link: "Link", copy: "Copy", copied: "Copied", telegramUser: "Telegram user",
    firstSeen: "First seen", lastSeen: "Last seen", channel: "Channel", expires: "Expires",
    history: "History", reference: "Reference", amount: "Amount", created: "Created",
    gateway: "Gateway", applied: "Applied", paidAt: "Paid at", needsOwner: "Gateway events that need you",
    state: "State", attempts: "Attempts", retry: "Retry", order: "Order", ad: "Ad", price: "Price",
    progress: "Paid so far", due: "Pay by", approve: "Approve", reject: "Reject", update: "Update",
    received: "Received", replay: "Replay", name: "Name", role: "Role", when: "When",
    action: "Action", target: "Target", ownersOnly: "This page is for the workspace's owner.",
    forwardedPost: "(forwarded post)", text: "text", file: "file", post: "post",
    active: "active", paused: "paused", removed: "removed", pause: "Pause", resume: "Resume",
    grace: "grace", expired: "expired", open: "open", cancelled: "cancelled",
    pending: "pending", processing: "processing", done: "done", failed: "failed",
    requested: "waiting for approval", approved: "approved, awaiting payment",
    part_paid: "part paid", rejected: "rejected", grant: "grant", reminder: "reminder",
    revoke: "removal", payment: "payment", sweep: "sweep", enabled: "enabled", disabled: "disabled",
    viewer: "viewer", editor: "editor", admin: "admin", owner: "owner",
    not_applied: "not applied", refused: "refused", not_success: "not successful",
    membersActive: "Members active", membersGrace: "Members in grace",
    ordersWaiting: "Ad orders to approve", accessFailing: "Access events failing",
    botProblems: "Bots with a problem", revenue: "Revenue, last 30 days",
    noRevenue: "No payments in the last 30 days.", members: "Members over the last 30 days",
    today: "{count} today", activeMembers: "Active", graceMembers: "In grace", noMembers: "No members in the last 30 days.",
    slots: "Ad slots", admission: "Admission", noPaidChannel: "No paid channel yet.",
    admissionMode: "How people get in", single_use_link: "a single-use invite link",
    join_request: "a join request the bot approves", addToWhitelist: "Let someone in without paying",
    note: "Note", importMembers: "Import members", idsOnePerLine: "Telegram user ids, one per line",
    whitelist: "Whitelist", grantAccess: "Grant access until a date", until: "Until",
    reason: "Reason", import: "Import", remove: "Remove",
    imported: "{added} added of {accepted} accepted; {rejected} refused.", addSlot: "Add a slot",
    pinned_post: "pinned post", broadcast: "broadcast", button: "button", priceUsdt: "Price in USDT",
    acceptsTrx: "Also takes TRX", coins: "Coins", deactivate: "Deactivate", activate: "Activate",
    paidChannel: "Paid", polling: "polling", webhook: "webhook",
    creator: "owner", administrator: "admin", member: "member", restricted: "restricted",
    left: "left", kicked: "banned", unknown: "unknown", expiry_notice: "expiry notice",
    checkout_declined: "payment declined", checkout_lapsed: "pay link expired",
    orphan: "no matching invoice", amount_mismatch: "amount differs", conflict: "conflicting",
    gateway_mismatch: "other gateway", sure: "Sure?", confirmYes: "Yes, do it", keep: "No, keep it",
    en: "English", fa: "فارسی",
    notFound: "This page does not exist.", toDashboard: "Go to the dashboard",
    loading: "Loading…", menu: "Menu", skip: "Skip to content", pagesNav: "Pages",
    loadFailed: "The page could not be loaded; this is the page you were on.",
    "e.required": "This is needed.", "e.unknown": "This form does not take it.",
    "e.wrong-type": "This kind of value is not accepted.", "e.not-a-number": "Enter a number.",
    "e.too-short": "Too short.", "e.too-long": "Too long.",
    "e.out-of-range": "Outside what is allowed.", "e.bad-format": "Not in the expected form.",
    "e.not-one-of": "Not one of the choices.", "e.duplicate": "Listed twice.",
    "e.taken": "Already in use.", "e.not-found": "Does not exist.",
    "e.reserved": "Kept for the system; choose another.", "e.invalid": "Not accepted.",
    "hint.price": "An amount such as 12.50.", "hint.tron_address": "A TRON address: T and 33 more letters and digits.",
    "hint.time_zone": "An IANA zone such as Asia/Tehran or Europe/Berlin.",
    "hint.code": "Letters A-Z, digits, _ and -.", "hint.telegram_user_id": "A Telegram user id: digits only.",
    badCredentials: "The email or password is wrong.",
    sessionEnded: "Your session has ended. Sign in again.",
    notAllowed: "Your role may not do this.", gone: "It is no longer there; the page shows what is.",
    changed: "This changed meanwhile; the page shows it as it is now.",
    tooLarge: "That is too much to send at once.", checkFields: "Some values were refused: see the marked fields.",
    refusedDetail: "Refused: {detail}", telegramRefused: "Telegram refused: {detail}",
    serviceDown: "A service this needs is not answering. Try again in a minute.",
    serverFailed: "Something failed on the server. Try again; if it repeats, give the operator this request id: {id}.",
    adOrder: "Ad order", search: "Find", findPerson: "Find by id, @username or name", person: "Person", advertiserTold: "message to the advertiser", canInvite: "can invite", cannotInvite: "cannot invite", canRestrict: "can remove members",
    cannotRestrict: "cannot remove members", addContent: "Add content", account: "Your account", botAdded: "{username} added.",
    joinUrlOf: "Join link for {title}", joinUrl: "Join link", invited: "{email} can now sign in.",
    passwordChanged: "Password changed; your other sessions have ended.", invite: "Add a member",
    changePassword: "Change your password", defaultGate: "Bot's default gate",
    gateChannels: "Channels to join first", firstPassword: "First password (they change it later)",
    currentPassword: "Current password", newPassword: "New password (10 characters or more)",
    txExplorer: "Transaction explorer address ({hash} stands for the hash)", setDefaultGate: "Default gate",
    showUpdate: "Show update", changeRole: "Change role", enable: "Enable", disable: "Disable",
    creditedAmount: "Credited", from: "from", payTo: "Pay to", trxRate: "TRX rate",
    noClaims: "No transaction sent yet.", claims: "Transactions", events: "What happened",
    toOrders: "All ad orders", addBotFirst: "Add a bot first, on the Bots page.", bot: "Bot",
    acceptsUsdt: "Takes USDT", edit: "Edit", channelFound: "Found “{title}”: {rights}.", free: "free",
    checkedAt: "checked", toAdmission: "Who gets in, and how", contentMade: "Content added. Its link: {link}",
    granted: "Access granted until {until}.", addChannel: "Add a channel", telegramId: "Telegram id",
    payLink: "Pay link", joinRequestLink: "Join-request link", botsThere: "What each bot may do there",
    selling: "Selling access", checkedBy: "Checked by bot", chat: "@username, link, post link or id",
    sellAccess: "Paid channel: people pay to be in it", managerBot: "Bot that sells and lets people in",
    currency: "Currency (USD, EUR, JPY…)", periodDays: "Days each payment buys",
    graceDays: "Grace days after expiry", reminderHours: "Remind this many hours before expiry (e.g. 72, 24)",
    contentBody: "Text", fileKind: "File kind", fileId: "Telegram file id",
    fromChat: "Id of the channel the post is in", messageId: "The post's message id", gateIs: "Gate",
    gate: "Gate", forDays: "For how many days", delete: "Delete", photo: "photo", video: "video",
    document: "document", ownGate: "these channels", find: "Find and add",
    invoiceMade: "Invoice for {amount} made. The link to pay it:", newInvoice: "New invoice",
    makeInvoice: "Make the invoice", credited: "credited", claim_rejected: "transaction refused",
    cancel: "Cancel", "e.too-precise": "Too many digits after the point for this currency.",
    "e.wrong": "That is not right.", dayOfMonth: "Day", month: "Month", year: "Year",
    who: "Who", change: "Change", system: "Gatehouse itself", fieldsChanged: "{count} fields",
    "audit.channels": "Channels", "audit.contents": "Content", "audit.bots": "Bots", "audit.inbox": "Updates",
    "audit.whitelist": "Whitelist", "audit.grants": "Grants", "audit.access_events": "Access events",
    "audit.ad_slots": "Ad slots", "audit.ad_orders": "Ad orders", "audit.team": "Team", "audit.workspace": "Workspace",
    "did.add": "added", "did.update": "changed", "did.delete": "deleted", "did.remove": "removed",
    "did.retry": "retried", "did.replay": "replayed", "did.check": "checked", "did.password": "password changed",
    "did.default_gate": "default gate set", "did.import_whitelist": "imported to the whitelist",
    "did.import_grant": "imported with access", "did.approve": "approved", "did.reject": "rejected",
    "did.cancel": "cancelled", "e.no-such-day": "That month has no such day.",
    exportCsv: "Download CSV", noGateways: "Billing has keys for no payment gateway yet: set one up to make invoices.",
    billingDown: "Billing cannot be reached, so no invoice can be made now. Try again in a minute.",
    "hint.chat": "The bot must be in the channel; an admin, to sell access or check members.",
    "hint.reminder_hours": "Up to 10, each from 1 to 8760.", "hint.tx_explorer": "https://…{hash}…",
    campaigns: "Campaigns", campaign: "Campaign", addCampaign: "Start a campaign",
    campaignName: "Name, shown in Telegram too (up to 32 characters)", joins: "Joined", leaves: "Left since",
    net: "Stayed", campaignMade: "Campaign started. Its link: {link}", toCampaigns: "All campaigns",
    publicChannel: "Public channel: Telegram leaves the link out when someone joins it directly, so some joins go uncounted. On a private channel every join through the link counts.",
    campaignDays: "Joins and leaves, last 30 days", noCampaignJoins: "Nobody joined or left through this link in the last 30 days.",
    addChannelFirst: "Add a channel first, on the Channels page.", "audit.campaigns": "Campaigns",
    "e.no-rights": "The bot may not do this there: make it an admin that can invite users.",
    "e.unreachable": "Telegram will not deliver to this person: they blocked the bot, never started it, or left Telegram.",
    "hint.campaign_name": "Shown in the channel's list of invite links, so you can tell them apart.",
  },
  fa: {
    brand: "گیت‌هاوس", language: "زبان", signIn: "ورود", signOut: "خروج",
    email: "ایمیل", password: "گذرواژه", signedInAs: "وارد شده با {email} ({role})",
    bots: "ربات‌ها", workspace: "فضای کار", wait: "{seconds} ثانیه دیگر دوباره تلاش کنید.",
    unreachable: "به API پنل دسترسی نیست.",
    dashboard: "پیشخوان", firstStart: "اولین اجرا؟ مالک را بسازید", setUp: "ساخت مالک",
    setupCode: "کد راه‌اندازی (چاپ‌شده توسط panel-api)", backToSignIn: "بازگشت به ورود",
    addBot: "افزودن ربات", token: "توکن ربات", mode: "حالت", add: "افزودن", username: "نام کاربری",
    status: "وضعیت", lastError: "آخرین خطا", none: "هیچ",
    timeZone: "منطقهٔ زمانی", tronAddress: "آدرس ترون فروشگاه", save: "ذخیره", saved: "ذخیره شد.",
    channels: "کانال‌ها", contents: "محتوا", people: "افراد", memberships: "عضویت‌ها",
    invoices: "صورت‌حساب‌ها", payments: "پرداخت‌ها", accessEvents: "دسترسی", orders: "سفارش‌های تبلیغ",
    deadUpdates: "به‌روزرسانی‌های ازکارافتاده", team: "تیم", audit: "گزارش تغییرات", all: "همه",
    more: "بیشتر", nothing: "هنوز چیزی نیست.", title: "عنوان", paid: "پرداخت‌شده", rights: "دسترسی ربات",
    yes: "بله", no: "نه", notAdmin: "ربات آنجا مدیر نیست", code: "کد", kind: "نوع", link: "پیوند",
    copy: "رونوشت", copied: "رونوشت شد", telegramUser: "کاربر تلگرام", firstSeen: "اولین بازدید",
    lastSeen: "آخرین بازدید", channel: "کانال", expires: "پایان", history: "تاریخچه",
    reference: "شناسه", amount: "مبلغ", created: "ساخته‌شده", gateway: "درگاه", applied: "اعمال‌شده",
    paidAt: "زمان پرداخت", needsOwner: "رویدادهای درگاه که به شما نیاز دارند", state: "وضعیت",
    attempts: "تلاش‌ها", retry: "تلاش دوباره", order: "سفارش", ad: "آگهی", price: "قیمت",
    progress: "پرداخت‌شده", due: "مهلت پرداخت", approve: "تأیید", reject: "رد", update: "به‌روزرسانی",
    received: "دریافت", replay: "اجرای دوباره", name: "نام", role: "نقش", when: "زمان",
    action: "کار", target: "هدف", ownersOnly: "این صفحه برای مالک فضای کار است.",
    forwardedPost: "(پست بازارسال‌شده)", text: "متن", file: "فایل", post: "پست",
    active: "فعال", paused: "متوقف", removed: "حذف‌شده", pause: "توقف", resume: "ازسرگیری",
    grace: "مهلت", expired: "منقضی", open: "باز", cancelled: "لغوشده",
    pending: "در انتظار", processing: "در حال انجام", done: "انجام‌شده", failed: "ناموفق",
    requested: "در انتظار تأیید", approved: "تأییدشده، در انتظار پرداخت", part_paid: "بخشی پرداخت‌شده",
    rejected: "ردشده", grant: "اعطا", reminder: "یادآوری", revoke: "حذف", payment: "پرداخت",
    sweep: "بررسی دوره‌ای", enabled: "فعال", disabled: "غیرفعال", viewer: "بیننده",
    editor: "ویرایشگر", admin: "مدیر", owner: "مالک", not_applied: "اعمال‌نشده", refused: "ردشده",
    not_success: "ناموفق",
    membersActive: "اعضای فعال", membersGrace: "اعضا در مهلت", ordersWaiting: "سفارش‌های منتظر تأیید",
    accessFailing: "دسترسی‌های ناموفق", botProblems: "ربات‌های دارای مشکل",
    revenue: "درآمد ۳۰ روز گذشته", noRevenue: "در ۳۰ روز گذشته پرداختی نبوده است.",
    members: "اعضا در ۳۰ روز گذشته", today: "امروز {count}", activeMembers: "فعال", graceMembers: "در مهلت", noMembers: "در ۳۰ روز گذشته عضوی نبوده است.",
    slots: "جایگاه‌های تبلیغ", admission: "ورود به کانال", noPaidChannel: "هنوز کانال پولی نیست.",
    admissionMode: "شیوهٔ ورود", single_use_link: "پیوند دعوت یک‌بارمصرف",
    join_request: "درخواست عضویت که ربات می‌پذیرد", addToWhitelist: "ورود بدون پرداخت",
    note: "یادداشت", importMembers: "وارد کردن اعضا", idsOnePerLine: "شناسه‌های تلگرام، هر خط یکی",
    whitelist: "فهرست مجاز", grantAccess: "دسترسی تا یک تاریخ", until: "تا", reason: "دلیل",
    import: "وارد کردن", remove: "حذف", imported: "{added} افزوده از {accepted} پذیرفته؛ {rejected} رد شد.",
    addSlot: "افزودن جایگاه", pinned_post: "پست سنجاق‌شده", broadcast: "پیام همگانی", button: "دکمه",
    priceUsdt: "قیمت به USDT", acceptsTrx: "TRX هم پذیرفته شود", coins: "ارزها",
    deactivate: "غیرفعال‌سازی", activate: "فعال‌سازی",
    paidChannel: "پولی", polling: "دریافت دوره‌ای", webhook: "وب‌هوک",
    creator: "سازنده", administrator: "مدیر", member: "عضو", restricted: "محدود",
    left: "خارج‌شده", kicked: "مسدود", unknown: "نامعلوم", expiry_notice: "اعلان پایان",
    checkout_declined: "پرداخت ناموفق", checkout_lapsed: "پیوند پرداخت منقضی",
    orphan: "بدون صورت‌حساب", amount_mismatch: "مبلغ متفاوت", conflict: "ناسازگار",
    gateway_mismatch: "درگاه دیگر", sure: "مطمئنید؟", confirmYes: "بله، انجام شود", keep: "نه، بماند",
    en: "English", fa: "فارسی",
    notFound: "این صفحه وجود ندارد.", toDashboard: "رفتن به پیشخوان",
    loading: "در حال بارگذاری…", menu: "فهرست", skip: "رفتن به محتوا", pagesNav: "صفحه‌ها",
    loadFailed: "صفحه بارگذاری نشد؛ این همان صفحه‌ای است که در آن بودید.",
    "e.required": "این را پر کنید.", "e.unknown": "این فرم آن را نمی‌پذیرد.",
    "e.wrong-type": "این نوع مقدار پذیرفته نیست.", "e.not-a-number": "یک عدد وارد کنید.",
    "e.too-short": "خیلی کوتاه است.", "e.too-long": "خیلی بلند است.",
    "e.out-of-range": "بیرون از بازهٔ مجاز است.", "e.bad-format": "قالب آن درست نیست.",
    "e.not-one-of": "از گزینه‌های مجاز نیست.", "e.duplicate": "دو بار آمده است.",
    "e.taken": "پیش‌تر به کار رفته است.", "e.not-found": "وجود ندارد.",
    "e.reserved": "برای سامانه نگه داشته شده؛ دیگری برگزینید.", "e.invalid": "پذیرفته نیست.",
    "hint.price": "مبلغی مانند 12.50.", "hint.tron_address": "آدرس ترون: T و ۳۳ حرف و رقم دیگر.",
    "hint.time_zone": "منطقه‌ای از IANA مانند Asia/Tehran یا Europe/Berlin.",
    "hint.code": "حرف‌های A-Z، رقم، _ و -.", "hint.telegram_user_id": "شناسهٔ کاربر تلگرام: فقط رقم.",
    badCredentials: "ایمیل یا گذرواژه درست نیست.",
    sessionEnded: "نشست شما پایان یافته است. دوباره وارد شوید.",
    notAllowed: "نقش شما اجازهٔ این کار را ندارد.", gone: "دیگر وجود ندارد؛ صفحه وضعیت کنونی را نشان می‌دهد.",
    changed: "این در این میان تغییر کرده است؛ صفحه وضعیت کنونی را نشان می‌دهد.",
    tooLarge: "برای یک‌بار فرستادن زیاد است.", checkFields: "برخی مقدارها پذیرفته نشد: فیلدهای نشان‌دار را ببینید.",
    refusedDetail: "پذیرفته نشد: {detail}", telegramRefused: "تلگرام نپذیرفت: {detail}",
    serviceDown: "سرویسی که لازم است پاسخ نمی‌دهد. یک دقیقهٔ دیگر دوباره تلاش کنید.",
    serverFailed: "در سرور خطایی رخ داد. دوباره تلاش کنید؛ اگر تکرار شد، این شناسهٔ درخواست را به گرداننده بدهید: {id}.",
    adOrder: "سفارش تبلیغ", search: "یافتن", findPerson: "یافتن با شناسه، نام کاربری یا نام", person: "شخص", advertiserTold: "پیام به آگهی‌دهنده", canInvite: "می‌تواند دعوت کند", cannotInvite: "نمی‌تواند دعوت کند",
    canRestrict: "می‌تواند عضو را بیرون کند", cannotRestrict: "نمی‌تواند عضو را بیرون کند", addContent: "افزودن محتوا", account: "حساب شما", botAdded: "{username} افزوده شد.",
    joinUrlOf: "پیوند پیوستن به {title}", joinUrl: "پیوند پیوستن",
    invited: "{email} اکنون می‌تواند وارد شود.",
    passwordChanged: "گذرواژه تغییر کرد؛ نشست‌های دیگر شما پایان یافت.", invite: "افزودن عضو",
    changePassword: "تغییر گذرواژهٔ شما", defaultGate: "دروازهٔ پیش‌فرض ربات",
    gateChannels: "کانال‌هایی که باید نخست عضو شوند",
    firstPassword: "گذرواژهٔ نخست (بعداً خودشان تغییرش می‌دهند)", currentPassword: "گذرواژهٔ کنونی",
    newPassword: "گذرواژهٔ تازه (دست‌کم ۱۰ نویسه)", txExplorer: "نشانی کاوشگر تراکنش ({hash} به جای هش)",
    setDefaultGate: "دروازهٔ پیش‌فرض", showUpdate: "نمایش به‌روزرسانی", changeRole: "تغییر نقش",
    enable: "فعال کردن", disable: "غیرفعال کردن", creditedAmount: "واریزشده", from: "از", payTo: "پرداخت به",
    trxRate: "نرخ TRX", noClaims: "هنوز تراکنشی فرستاده نشده است.", claims: "تراکنش‌ها",
    events: "آنچه رخ داد", toOrders: "همهٔ سفارش‌های تبلیغ",
    addBotFirst: "نخست در صفحهٔ ربات‌ها یک ربات بیفزایید.", bot: "ربات", acceptsUsdt: "USDT می‌پذیرد",
    edit: "ویرایش", channelFound: "«{title}» پیدا شد: {rights}.", free: "رایگان", checkedAt: "بررسی‌شده در",
    toAdmission: "چه کسی و چگونه وارد می‌شود", contentMade: "محتوا افزوده شد. پیوند آن: {link}",
    granted: "دسترسی تا {until} داده شد.", addChannel: "افزودن کانال", telegramId: "شناسهٔ تلگرام",
    payLink: "پیوند پرداخت", joinRequestLink: "پیوند درخواست عضویت",
    botsThere: "هر ربات آنجا چه می‌تواند بکند", selling: "فروش دسترسی", checkedBy: "بررسی با ربات",
    chat: "نام کاربری با @، پیوند، پیوند پست یا شناسه", sellAccess: "کانال پولی: برای عضویت پرداخت می‌کنند",
    managerBot: "رباتی که می‌فروشد و راه می‌دهد", currency: "ارز (USD، EUR، JPY…)",
    periodDays: "روزهایی که هر پرداخت می‌خرد", graceDays: "روزهای مهلت پس از پایان",
    reminderHours: "یادآوری چند ساعت پیش از پایان (مثلاً 72، 24)", contentBody: "متن", fileKind: "نوع فایل",
    fileId: "شناسهٔ فایل تلگرام", fromChat: "شناسهٔ کانالی که پست در آن است", messageId: "شناسهٔ پیام پست",
    gateIs: "دروازه", gate: "دروازه", forDays: "برای چند روز", delete: "حذف", photo: "عکس", video: "ویدیو",
    document: "سند", ownGate: "این کانال‌ها", find: "یافتن و افزودن",
    invoiceMade: "صورت‌حساب {amount} ساخته شد. پیوند پرداخت آن:", newInvoice: "صورت‌حساب تازه",
    makeInvoice: "ساختن صورت‌حساب", credited: "واریزشده", claim_rejected: "تراکنش پذیرفته نشد", cancel: "لغو",
    "e.too-precise": "برای این ارز رقم‌های پس از ممیز زیاد است.", "e.wrong": "درست نیست.", dayOfMonth: "روز", month: "ماه", year: "سال",
    who: "چه کسی", change: "تغییر", system: "خود گیت‌هاوس", fieldsChanged: "{count} فیلد",
    "audit.channels": "کانال‌ها", "audit.contents": "محتوا", "audit.bots": "ربات‌ها", "audit.inbox": "به‌روزرسانی‌ها",
    "audit.whitelist": "فهرست مجاز", "audit.grants": "اعطای دسترسی", "audit.access_events": "رویدادهای دسترسی",
    "audit.ad_slots": "جایگاه‌های تبلیغ", "audit.ad_orders": "سفارش‌های تبلیغ", "audit.team": "تیم", "audit.workspace": "فضای کار",
    "did.add": "افزوده شد", "did.update": "تغییر کرد", "did.delete": "حذف شد", "did.remove": "برداشته شد",
    "did.retry": "دوباره تلاش شد", "did.replay": "دوباره اجرا شد", "did.check": "بررسی شد", "did.password": "گذرواژه عوض شد",
    "did.default_gate": "دروازهٔ پیش‌فرض تعیین شد", "did.import_whitelist": "به فهرست مجاز وارد شد",
    "did.import_grant": "با دسترسی وارد شد", "did.approve": "تأیید شد", "did.reject": "رد شد",
    "did.cancel": "لغو شد", "e.no-such-day": "آن ماه چنین روزی ندارد.",
    exportCsv: "دریافت CSV", noGateways: "بخش پرداخت هنوز کلید هیچ درگاهی را ندارد: برای ساختن صورت‌حساب یکی را راه بیندازید.",
    billingDown: "به بخش پرداخت دسترسی نیست، پس اکنون صورت‌حسابی ساخته نمی‌شود. یک دقیقهٔ دیگر دوباره بکوشید.",
    "hint.chat": "ربات باید در کانال باشد؛ برای فروش دسترسی یا بررسی اعضا، مدیر آن.",
    "hint.reminder_hours": "تا ۱۰ عدد، هر یک از ۱ تا ۸۷۶۰.", "hint.tx_explorer": "https://…{hash}…",
    campaigns: "کارزارها", campaign: "کارزار", addCampaign: "راه‌اندازی کارزار",
    campaignName: "نام، که در تلگرام هم دیده می‌شود (تا ۳۲ نویسه)", joins: "پیوستند", leaves: "رفتند",
    net: "ماندند", campaignMade: "کارزار راه افتاد. پیوند آن: {link}", toCampaigns: "همهٔ کارزارها",
    publicChannel: "کانال عمومی: وقتی کسی مستقیم به آن بپیوندد، تلگرام پیوند را نمی‌فرستد و برخی پیوستن‌ها شمرده نمی‌شوند. در کانال خصوصی هر پیوستن از راه پیوند شمرده می‌شود.",
    campaignDays: "پیوستن و رفتن در ۳۰ روز گذشته", noCampaignJoins: "در ۳۰ روز گذشته کسی از راه این پیوند نپیوسته یا نرفته است.",
    addChannelFirst: "نخست در صفحهٔ کانال‌ها یک کانال بیفزایید.", "audit.campaigns": "کارزارها",
    "e.no-rights": "ربات در آنجا این اجازه را ندارد: آن را مدیری کنید که بتواند کاربر دعوت کند.",
    "e.unreachable": "تلگرام پیام را به این شخص نمی‌رساند: ربات را مسدود کرده، هرگز آن را شروع نکرده یا از تلگرام رفته است.",
    "hint.campaign_name": "در فهرست پیوندهای دعوت کانال دیده می‌شود تا آن‌ها را از هم بازشناسید.",
  },
};
const KEY = "gatehouse.language";
let current = "en";

export function language() { return current; }

/** The language this browser chose before, else the workspace's. @param {string} fallback */
export function chosenLanguage(fallback) {
  const kept = localStorage.getItem(KEY) ?? "";
  return WORDS[kept] ? kept : (WORDS[fallback] ? fallback : "en");
}

/** @param {string} lang @param {boolean} [remember] */
export function setLanguage(lang, remember = false) {
  current = WORDS[lang] ? lang : "en";
  if (remember) localStorage.setItem(KEY, current);
  document.documentElement.lang = current;
  document.documentElement.dir = current === "fa" ? "rtl" : "ltr";
  for (const node of document.querySelectorAll("[data-text]")) {
    if (node instanceof HTMLElement) node.textContent = t(node.dataset.text ?? "");
  }
}

/** @param {string} key @param {Record<string, unknown>} [values] */
export function t(key, values = {}) {
  const text = WORDS[current][key] ?? WORDS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ""));
}

/** Whether the page has words for `key` (a field hint, say). @param {string} key */
export function has(key) {
  return key in WORDS.en;
}

/** @param {number | string} value */
export function number(value) {
  return formatNumber(current, value);
}

/** An amount as decimal text in major units, with its currency (see format.js).
 * @param {string} amount @param {string} currency */
export function money(amount, currency) {
  return formatMoney(current, amount, currency);
}

/** @param {string | Date} value @param {string} timeZone */
export function dateTime(value, timeZone) {
  return formatDateTime(current, value, timeZone);
}

/** @param {string} value YYYY-MM-DD */
export function day(value) {
  return formatDay(current, value);
}
