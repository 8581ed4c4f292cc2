@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a collection's commit change offers push subscriptions: the item it updates (a series
/// path, a channel name) under a data adapter, and its updates of that item, in order, each the
/// fields a trigger and a notification format read.
///
/// A collection kind whose updates can be pushed conforms its ``CommitChange`` to this in its
/// own folder (TimeSeries/SeriesState+Push.swift, History/ChannelState+Push.swift); the push
/// participant (PushState) matches every change that conforms, and knows no collection.
protocol PushItemUpdates: CommitChange {
    /// The data adapter whose items this change updates.
    var pushAdapter: PushSubscription.DataAdapter { get }
    /// The item updated: the name subscriptions list.
    var pushItem: String { get }
    /// The updates, in commit order: each decodes its fields only when a subscription matches.
    func pushUpdates() -> [() throws -> [String: String]]
}
