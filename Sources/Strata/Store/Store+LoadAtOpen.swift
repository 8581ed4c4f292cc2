import StrataFormat
import StrataFiles
import StrataEngine

extension Store {
    /// Reads, from the state recovery rebuilt, every collection state that opening loads — the
    /// push subscriptions, when the store has any subscription (``startParticipants(push:)``).
    /// Called in recovery's first phase, before anything is written (FORMAT.md 4.5, step 6a): a
    /// fault found here refuses the open and leaves every file as it was.
    static func loadAtOpen(_ snapshot: Snapshot) throws -> PushModel? {
        let prefix = PushLayout.prefix(2)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        guard try cursor.next() else { return nil }
        return try PushModel.load(from: snapshot)
    }
}
