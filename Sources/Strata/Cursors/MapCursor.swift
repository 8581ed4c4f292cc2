/// The elements of a cursor, transformed as they are read (``StrataCursor/map(_:)``).
public final class MapCursor<Base: StrataCursor, Element>: StrataCursor {
    private let base: Base
    private let transform: (Base.Element) throws -> Element

    init(_ base: Base, _ transform: @escaping (Base.Element) throws -> Element) {
        self.base = base
        self.transform = transform
    }

    /// The next element of the base cursor, transformed, or nil at its end.
    public func next() throws -> Element? {
        guard let element = try base.next() else { return nil }
        return try transform(element)
    }
}
