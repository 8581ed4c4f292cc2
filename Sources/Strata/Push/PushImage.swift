import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What the parts of push state share: the model under its lock, the turnstile that orders the
/// writers of push records (see ``PushTurnstile``), and the store's clock, by which waiting
/// updates come due.
final class PushImage: Sendable {
    let model: Mutex<PushModel>
    let turnstile = PushTurnstile()
    /// `model.subscriptions.count`, read without the lock on every commit.
    let subscriptionCount = Atomic<Int>(0)
    let clock: @Sendable () -> Date

    init(_ model: PushModel, clock: @escaping @Sendable () -> Date) {
        self.model = Mutex(model)
        self.clock = clock
        subscriptionCount.store(model.subscriptions.count, ordering: .relaxed)
    }

    /// The clock's time in milliseconds.
    var now: Int64 { SeriesTime.milliseconds(clock()) ?? 0 }
}
