import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Builders of notification formats: the JSON text a push subscription's
/// `notificationFormat` holds, as Lightstreamer's `MPNBuilder` builds it.
///
/// Every argument is optional; a `nil` argument leaves its member out, so the format holds
/// exactly the members given. Text arguments may hold placeholders — `${field}`, `$[n]`
/// (1-based, in the subscription's field order) and `${LS_MPN_subscription_ID}` — which each
/// notification replaces with the update's field text. Object members are written sorted by
/// name, so the same arguments always give the same text.
///
/// ```swift
/// let apple = PushFormat.apple(title: "${stock_name}", body: "now ${last_price}", badge: "AUTO")
/// // {"aps":{"alert":{"body":"now ${last_price}","title":"${stock_name}"},"badge":"AUTO"}}
///
/// let google = PushFormat.google(title: "${stock_name}", body: "now ${last_price}",
///                                data: ["price": "${last_price}"])
/// // {"android":{"data":{"price":"${last_price}"},"notification":{"body":"now ${last_price}","title":"${stock_name}"}}}
/// ```
public enum PushFormat {
    /// The notification format of an Apple (APNs) payload: the `aps` dictionary, with custom
    /// members beside it.
    ///
    /// `aps.alert` is the string `alert` when no other alert member is given; as soon as one of
    /// `title`, `subtitle`, `body`, the localization keys and arguments, `actionLocKey` or
    /// `launchImage` is given, `aps.alert` is a dictionary of those, and `alert` (if given) is its
    /// `body` unless `body` is given too, which then wins.
    ///
    /// ```swift
    /// PushFormat.apple(alert: "Stock ${stock_name} is now valued ${last_price}", badge: "AUTO", sound: "default")
    /// // {"aps":{"alert":"Stock ${stock_name} is now valued ${last_price}","badge":"AUTO","sound":"default"}}
    ///
    /// PushFormat.apple(bodyLocKey: "PRICE_ALERT", bodyLocArguments: ["${stock_name}", "$[2]"],
    ///                  contentAvailable: true, customData: ["item": "${stock_name}"])
    /// // {"aps":{"alert":{"loc-args":["${stock_name}","$[2]"],"loc-key":"PRICE_ALERT"},"content-available":1},"item":"${stock_name}"}
    /// ```
    ///
    /// - Parameters:
    ///   - alert: `aps.alert` as a plain string (or the alert body, see above).
    ///   - title: `aps.alert.title`.
    ///   - subtitle: `aps.alert.subtitle`.
    ///   - body: `aps.alert.body`.
    ///   - badge: `aps.badge`: `"AUTO"` (the device-and-application's next badge number, counted
    ///     by the store), an integer written as text (`"3"`, written as a JSON number), or any
    ///     other text such as a placeholder (written as a JSON string).
    ///   - sound: `aps.sound`, e.g. `"default"`.
    ///   - category: `aps.category`.
    ///   - threadID: `aps.thread-id`.
    ///   - contentAvailable: `aps.content-available`, written as `1` or `0`.
    ///   - mutableContent: `aps.mutable-content`, written as `1` or `0`.
    ///   - customData: members of the payload's root beside `aps`; a member named `aps` is ignored
    ///     (the `aps` dictionary is the one built from the other arguments).
    ///   - titleLocKey: `aps.alert.title-loc-key`.
    ///   - titleLocArguments: `aps.alert.title-loc-args`.
    ///   - bodyLocKey: `aps.alert.loc-key`.
    ///   - bodyLocArguments: `aps.alert.loc-args`.
    ///   - actionLocKey: `aps.alert.action-loc-key`.
    ///   - launchImage: `aps.alert.launch-image`.
    /// - Returns: The format as compact JSON text, members sorted by name.
    public static func apple(
        alert: String? = nil,
        title: String? = nil,
        subtitle: String? = nil,
        body: String? = nil,
        badge: String? = nil,
        sound: String? = nil,
        category: String? = nil,
        threadID: String? = nil,
        contentAvailable: Bool? = nil,
        mutableContent: Bool? = nil,
        customData: [String: JSON]? = nil,
        titleLocKey: String? = nil,
        titleLocArguments: [String]? = nil,
        bodyLocKey: String? = nil,
        bodyLocArguments: [String]? = nil,
        actionLocKey: String? = nil,
        launchImage: String? = nil
    ) -> String {
        var alertMembers: [String: JSON] = [:]
        alertMembers["title"] = title.map(JSON.string)
        alertMembers["subtitle"] = subtitle.map(JSON.string)
        alertMembers["title-loc-key"] = titleLocKey.map(JSON.string)
        alertMembers["title-loc-args"] = titleLocArguments.map(stringArray)
        alertMembers["loc-key"] = bodyLocKey.map(JSON.string)
        alertMembers["loc-args"] = bodyLocArguments.map(stringArray)
        alertMembers["action-loc-key"] = actionLocKey.map(JSON.string)
        alertMembers["launch-image"] = launchImage.map(JSON.string)

        var aps: [String: JSON] = [:]
        if alertMembers.isEmpty && body == nil {
            aps["alert"] = alert.map(JSON.string)
        } else {
            alertMembers["body"] = (body ?? alert).map(JSON.string)
            aps["alert"] = .object(alertMembers)
        }
        aps["badge"] = badge.map(badgeValue)
        aps["sound"] = sound.map(JSON.string)
        aps["category"] = category.map(JSON.string)
        aps["thread-id"] = threadID.map(JSON.string)
        aps["content-available"] = contentAvailable.map { .int($0 ? 1 : 0) }
        aps["mutable-content"] = mutableContent.map { .int($0 ? 1 : 0) }

        var root = customData ?? [:]
        root["aps"] = .object(aps)
        return JSON.object(root).description
    }

    /// The notification format of a Google (FCM) message: its `android` member, with the
    /// `notification`, the `data` and the delivery options inside it, as Lightstreamer's Google
    /// builder writes it (the FCM HTTP v1 `AndroidConfig`; the delivery loop adds the token).
    ///
    /// ```swift
    /// PushFormat.google(title: "Stock ${stock_name}", body: "now ${last_price}", icon: "ic_stock",
    ///                   collapseKey: "prices", priority: "HIGH", timeToLive: "3600s",
    ///                   data: ["subscription": "${LS_MPN_subscription_ID}"])
    /// // {"android":{"collapse_key":"prices","data":{"subscription":"${LS_MPN_subscription_ID}"},
    /// //  "notification":{"body":"now ${last_price}","icon":"ic_stock","title":"Stock ${stock_name}"},
    /// //  "priority":"HIGH","ttl":"3600s"}}   (one line)
    /// ```
    ///
    /// - Parameters:
    ///   - title: `android.notification.title`.
    ///   - body: `android.notification.body`.
    ///   - icon: `android.notification.icon`.
    ///   - sound: `android.notification.sound`.
    ///   - tag: `android.notification.tag`.
    ///   - color: `android.notification.color`, `#rrggbb`.
    ///   - clickAction: `android.notification.click_action`.
    ///   - collapseKey: `android.collapse_key`.
    ///   - priority: `android.priority`: FCM's `"HIGH"` or `"NORMAL"`.
    ///   - timeToLive: `android.ttl`: a duration in FCM's form, seconds with an `s`, e.g. `"3600s"`.
    ///   - data: `android.data`: string members for the application.
    ///   - titleLocKey: `android.notification.title_loc_key`.
    ///   - titleLocArguments: `android.notification.title_loc_args`.
    ///   - bodyLocKey: `android.notification.body_loc_key`.
    ///   - bodyLocArguments: `android.notification.body_loc_args`.
    /// - Returns: The format as compact JSON text, members sorted by name.
    public static func google(
        title: String? = nil,
        body: String? = nil,
        icon: String? = nil,
        sound: String? = nil,
        tag: String? = nil,
        color: String? = nil,
        clickAction: String? = nil,
        collapseKey: String? = nil,
        priority: String? = nil,
        timeToLive: String? = nil,
        data: [String: String]? = nil,
        titleLocKey: String? = nil,
        titleLocArguments: [String]? = nil,
        bodyLocKey: String? = nil,
        bodyLocArguments: [String]? = nil
    ) -> String {
        var notification: [String: JSON] = [:]
        notification["title"] = title.map(JSON.string)
        notification["body"] = body.map(JSON.string)
        notification["icon"] = icon.map(JSON.string)
        notification["sound"] = sound.map(JSON.string)
        notification["tag"] = tag.map(JSON.string)
        notification["color"] = color.map(JSON.string)
        notification["click_action"] = clickAction.map(JSON.string)
        notification["title_loc_key"] = titleLocKey.map(JSON.string)
        notification["title_loc_args"] = titleLocArguments.map(stringArray)
        notification["body_loc_key"] = bodyLocKey.map(JSON.string)
        notification["body_loc_args"] = bodyLocArguments.map(stringArray)

        var android: [String: JSON] = [:]
        if !notification.isEmpty { android["notification"] = .object(notification) }
        android["data"] = data.map { .object($0.mapValues(JSON.string)) }
        android["collapse_key"] = collapseKey.map(JSON.string)
        android["priority"] = priority.map(JSON.string)
        android["ttl"] = timeToLive.map(JSON.string)
        return JSON.object(["android": .object(android)]).description
    }

    private static func stringArray(_ strings: [String]) -> JSON { .array(strings.map(JSON.string)) }

    /// A badge given as an integer becomes a JSON number; `AUTO` and any other text stay strings.
    private static func badgeValue(_ badge: String) -> JSON {
        if let number = Int64(badge), String(number) == badge { return .int(number) }
        return .string(badge)
    }
}
