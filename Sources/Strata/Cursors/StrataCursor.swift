/// A sequence of elements read one at a time by a method that can throw: the way Strata hands
/// out what it reads lazily from storage (GRDB's `Cursor` has the same shape).
///
/// A cursor is not a Swift `Sequence`, whose iterator cannot throw: an I/O error or a corrupted
/// block met halfway is a thrown error, not a silent end. Walk one with `while let`:
///
/// ```swift
/// let cursor = try store.cursor(from: Array("a".utf8))
/// while let (key, value) = try cursor.next() {
///     print(key, value)
/// }
/// ```
///
/// or with the methods users know from `Sequence`: the lazy ``map(_:)``, ``filter(_:)``,
/// ``compactMap(_:)`` and ``prefix(_:)`` return cursors; ``forEach(_:)``,
/// ``first(where:)``, ``contains(where:)``, ``reduce(_:_:)``, ``reduce(into:_:)`` and
/// ``collect()`` (or `Array(cursor)`) read it to the end or until they have their answer.
///
/// Named `StrataCursor` rather than `Cursor` so that a program can import Strata beside GRDB.
///
/// ## Contract
/// - ``next()`` returns the next element, or nil at the end; after it returned nil once it keeps
///   returning nil. No call order is a programmer error: nothing traps.
/// - A cursor that threw keeps throwing: it cannot resume past a failure.
/// - A cursor is used from one thread at a time (it is not `Sendable`), and reads one snapshot:
///   writes made after it was created are not seen.
public protocol StrataCursor<Element>: AnyObject {
    /// The type of the elements.
    associatedtype Element

    /// The next element, or nil when the cursor is at its end (and on every call after that).
    func next() throws -> Element?
}

extension StrataCursor {
    /// Calls `body` with each remaining element, in order.
    public func forEach(_ body: (Element) throws -> Void) throws {
        while let element = try next() { try body(element) }
    }

    /// Every remaining element, in order (the same as `Array(cursor)`).
    public func collect() throws -> [Element] {
        var out: [Element] = []
        while let element = try next() { out.append(element) }
        return out
    }

    /// The first remaining element that satisfies `predicate`, or nil; the cursor is left just
    /// after it.
    public func first(where predicate: (Element) throws -> Bool) throws -> Element? {
        while let element = try next() {
            if try predicate(element) { return element }
        }
        return nil
    }

    /// Whether a remaining element satisfies `predicate`; the cursor is left just after the first
    /// one that does.
    public func contains(where predicate: (Element) throws -> Bool) throws -> Bool {
        try first(where: predicate) != nil
    }

    /// The result of combining the remaining elements with `combine`, starting from `initial`.
    public func reduce<Result>(_ initial: Result, _ combine: (Result, Element) throws -> Result) throws -> Result {
        var result = initial
        while let element = try next() { result = try combine(result, element) }
        return result
    }

    /// The result of updating `initial` with each remaining element.
    public func reduce<Result>(into initial: Result, _ update: (inout Result, Element) throws -> Void) throws -> Result {
        var result = initial
        while let element = try next() { try update(&result, element) }
        return result
    }

    /// A cursor of `transform` applied to each element, computed as it is read.
    public func map<T>(_ transform: @escaping (Element) throws -> T) -> MapCursor<Self, T> {
        MapCursor(self, transform)
    }

    /// A cursor of the elements that satisfy `isIncluded`, tested as they are read.
    public func filter(_ isIncluded: @escaping (Element) throws -> Bool) -> FilterCursor<Self> {
        FilterCursor(self, isIncluded)
    }

    /// A cursor of the non-nil results of `transform` applied to each element, as they are read.
    public func compactMap<T>(_ transform: @escaping (Element) throws -> T?) -> CompactMapCursor<Self, T> {
        CompactMapCursor(self, transform)
    }

    /// A cursor of at most `maxLength` elements: it ends there without reading further.
    ///
    /// It is a programmer error to pass a negative `maxLength` (as for `Sequence.prefix(_:)`).
    public func prefix(_ maxLength: Int) -> PrefixCursor<Self> {
        precondition(maxLength >= 0, "a cursor's prefix length must not be negative")
        return PrefixCursor(self, maxLength: maxLength)
    }
}

extension StrataCursor where Element: Equatable {
    /// Whether a remaining element equals `element`; the cursor is left just after it.
    public func contains(_ element: Element) throws -> Bool {
        try first(where: { $0 == element }) != nil
    }
}

extension Array {
    /// The remaining elements of `cursor`, in order.
    ///
    /// ```swift
    /// let pairs = try Array(store.cursor(from: Array("a".utf8)))
    /// ```
    public init<C: StrataCursor>(_ cursor: C) throws where C.Element == Element {
        self = try cursor.collect()
    }
}
