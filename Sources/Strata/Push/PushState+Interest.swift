import StrataFormat
import StrataFiles
import StrataEngine

extension PushState {
    /// Only writes of subscribed items need describing: a series or channel nobody subscribes to
    /// commits without building its changes for push (API.md: no cost where nothing listens).
    func wantsChanges(of kind: CollectionKind, name: String) -> Bool {
        guard let adapter = StoreCollections.module(of: kind)?.pushAdapter else { return false }
        return model.withLock { $0.byItem[ItemKey(adapter: adapter, item: name)] != nil }
    }
}
