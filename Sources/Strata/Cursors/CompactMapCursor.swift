/// The non-nil results of a transform of a cursor's elements, computed as they are read
/// (``StrataCursor/compactMap(_:)``).
public final class CompactMapCursor<Base: StrataCursor, Element>: StrataCursor {
    private let base: Base
    private let transform: (Base.Element) throws -> Element?

    init(_ base: Base, _ transform: @escaping (Base.Element) throws -> Element?) {
        self.base = base
        self.transform = transform
    }

    /// The next non-nil result of the transform, or nil at the base cursor's end.
    public func next() throws -> Element? {
        while let element = try base.next() {
            if let result = try transform(element) { return result }
        }
        return nil
    }
}
