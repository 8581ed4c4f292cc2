/// The elements of a cursor that satisfy a predicate, tested as they are read
/// (``StrataCursor/filter(_:)``).
public final class FilterCursor<Base: StrataCursor>: StrataCursor {
    private let base: Base
    private let isIncluded: (Base.Element) throws -> Bool

    init(_ base: Base, _ isIncluded: @escaping (Base.Element) throws -> Bool) {
        self.base = base
        self.isIncluded = isIncluded
    }

    /// The next element of the base cursor that satisfies the predicate, or nil at its end.
    public func next() throws -> Base.Element? {
        while let element = try base.next() {
            if try isIncluded(element) { return element }
        }
        return nil
    }
}
