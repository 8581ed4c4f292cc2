import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The push subscriptions of a store, one object per store: the model shared by its parts
/// (``PushImage``), the API writes (``PushWriter``), the commit participant that turns each
/// committed update of a subscribed item into outbox rows of the same batch (``PushMatcher``),
/// and the timer that releases updates waiting for a frequency limit (``PushTimer``).
final class PushState: CollectionState {
    static let registryName = ""

    let engine: Engine
    /// The store's executor, for the `async` twins.
    let executor: StoreExecutor
    let broadcaster: CommitBroadcaster
    let image: PushImage
    let writer: PushWriter
    let matcher: PushMatcher
    let timer: PushTimer

    /// `loaded`: the model open read in recovery's first phase (``PushCollection/load(from:)``), if any.
    init(store: Store, loaded: PushModel? = nil) throws {
        engine = store.engine
        executor = store.executor
        broadcaster = store.broadcaster
        image = PushImage(try loaded ?? PushModel.load(from: store.engine.snapshot()), clock: store.options.clock)
        writer = PushWriter(image: image, engine: engine)
        matcher = PushMatcher(image: image)
        timer = PushTimer(image: image, engine: engine)
        engine.register(matcher)
    }

    func storeDidClose() {
        timer.cancel()
    }

    func storeDidFail(_ error: StrataError) {
        timer.cancel()
    }

    var now: Int64 { image.now }
}
