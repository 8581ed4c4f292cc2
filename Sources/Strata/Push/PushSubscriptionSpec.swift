@_spi(Layers) import StrataFormat

/// What a subscription is apart from its number, status and status time: its mode, items,
/// fields, adapter, format and trigger (with their compiled forms), buffer and frequency.
///
/// Immutable and shared: at open, subscriptions whose stored specs are the same bytes share one
/// (``PushRecords/CompileCache``), so that a million subscriptions with a few distinct formats
/// hold a few specs and each costs only its ``PushModel/SubscriptionEntry`` (FORMAT.md §18).
/// A change (``PushNotifications/modify(_:triggerExpression:notificationFormat:)``) makes a new one.
final class PushSubscriptionSpec: Sendable {
    /// The subscription as subscribed, without id, status or status time.
    let subscription: PushSubscription
    let template: NotificationTemplate
    let trigger: PushTrigger?
    /// The items as ``PushModel/ItemKey``s, each once (the model's `byItem` index).
    let itemKeys: [PushModel.ItemKey]
    /// ``PushSubscription/frequencyInterval``, computed once.
    let frequencyInterval: Int64?

    /// REQUIRES: `template` and `trigger` compiled from `subscription`'s format and trigger.
    init(_ subscription: PushSubscription, template: NotificationTemplate, trigger: PushTrigger?) {
        var s = subscription
        s.subscriptionID = nil
        s.status = .unknown
        s.statusTimestamp = nil
        self.subscription = s
        self.template = template
        self.trigger = trigger
        var seen = Set<String>()
        itemKeys = s.items.filter { seen.insert($0).inserted }.map { PushModel.ItemKey(adapter: s.dataAdapter, item: $0) }
        frequencyInterval = s.frequencyInterval
    }

    /// The spec with another subscription (its compiled template and trigger kept).
    func with(subscription: PushSubscription) -> PushSubscriptionSpec {
        PushSubscriptionSpec(subscription, template: template, trigger: trigger)
    }

    /// The spec with another compiled template.
    func with(template: NotificationTemplate) -> PushSubscriptionSpec {
        PushSubscriptionSpec(subscription, template: template, trigger: trigger)
    }

    /// The spec with another compiled trigger.
    func with(trigger: PushTrigger?) -> PushSubscriptionSpec {
        PushSubscriptionSpec(subscription, template: template, trigger: trigger)
    }
}
