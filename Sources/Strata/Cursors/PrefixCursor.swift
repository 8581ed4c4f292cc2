/// The first elements of a cursor, at most a given number (``StrataCursor/prefix(_:)``).
public final class PrefixCursor<Base: StrataCursor>: StrataCursor {
    private let base: Base
    /// How many more elements may be read; 0 once the prefix or the base ended.
    private var remaining: Int

    init(_ base: Base, maxLength: Int) {
        self.base = base
        self.remaining = maxLength
    }

    /// The next element of the base cursor while fewer than the maximum were read, else nil
    /// (without reading the base further).
    public func next() throws -> Base.Element? {
        guard remaining > 0 else { return nil }
        guard let element = try base.next() else {
            remaining = 0
            return nil
        }
        remaining -= 1
        return element
    }
}
