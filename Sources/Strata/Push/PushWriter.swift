@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The writes of push state that the API makes (``PushNotifications``: register, subscribe,
/// modify, delete, reset badges…): each runs holding the turnstile, commits the records it adds,
/// then applies its change to the model.
struct PushWriter: Sendable {
    let image: PushImage
    let engine: Engine

    /// Runs `body` holding the turnstile, commits the records it adds, then applies `after` to
    /// the model: the way every API write changes push state.
    func write<R>(_ body: (PushModel, inout WriteBatch) throws -> (R, (inout PushModel) -> Void)) throws -> R {
        try writeReporting { m, batch, _ in try body(m, &batch) }
    }

    /// ``write(_:)`` whose body also reports the status changes it makes (to
    /// ``PushNotifications/statusChanges(bufferSize:)`` streams, with the commit).
    func writeReporting<R>(_ body: (PushModel, inout WriteBatch, inout [PushStatusChange]) throws -> (R, (inout PushModel) -> Void)) throws -> R {
        let pass = image.turnstile.enter()
        defer { pass.leave() }
        var batch = WriteBatch()
        var statuses: [PushStatusChange] = []
        // The copy of the model is gone before `apply` changes the model, so that the change
        // copies none of its tables.
        let (result, apply) = try {
            let current = image.model.withLock { $0 }
            return try body(current, &batch, &statuses)
        }()
        if !batch.isEmpty {
            var commit = CommitBatch(records: batch)
            if !statuses.isEmpty { commit.changes.append(PushStatusChanged(changes: statuses)) }
            try engine.commit(commit)
        }
        image.model.withLock { apply(&$0) }
        image.subscriptionCount.store(image.model.withLock { $0.subscriptions.count }, ordering: .relaxed)
        return result
    }

    static func putCounters(_ m: PushModel, into batch: inout WriteBatch) {
        batch.putRaw(PushLayout.countersKey, PushRecords.counters(m))
    }
}
