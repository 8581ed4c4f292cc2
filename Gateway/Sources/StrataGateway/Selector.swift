/// A Mango selector of `_changes?filter=_selector` (CouchDB 3), the subset served: field
/// conditions on (dotted) paths with `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$exists`,
/// `$in`, `$nin`, `$type`, `$size`; and `$and`, `$or`, `$nor`, `$not`. An implicit
/// `{"field": value}` is `$eq`. Other operators are refused with 400 when the feed is asked.
/// Values compare in CouchDB's collation order of types (null < false < true < numbers <
/// strings < arrays < objects); numbers by value, strings by code point.
indirect enum Selector: Sendable {
    case all([Selector])
    case any([Selector])
    case none([Selector])
    case not(Selector)
    case field([String], Condition)

    indirect enum Condition: Sendable {
        case eq(JSON), ne(JSON), gt(JSON), gte(JSON), lt(JSON), lte(JSON)
        case exists(Bool), inList([JSON]), notIn([JSON]), type(String), size(Int)
        case and([Condition])
        case not(Condition)
    }

    /// The deepest nesting accepted.
    static let maximumDepth = 32

    init(_ value: JSON, depth: Int = 0) throws(GatewayError) {
        guard depth < Self.maximumDepth else { throw .badRequest("selector nested deeper than \(Self.maximumDepth)") }
        guard let members = value.objectMembers else { throw .badRequest("a selector must be a JSON object") }
        var parts: [Selector] = []
        for (key, operand) in members {
            switch key {
            case "$and", "$or", "$nor":
                guard let list = operand.arrayValue else { throw .badRequest("\(key) takes an array of selectors") }
                var subs: [Selector] = []
                for element in list { subs.append(try Selector(element, depth: depth + 1)) }
                parts.append(key == "$and" ? .all(subs) : key == "$or" ? .any(subs) : .none(subs))
            case "$not":
                parts.append(.not(try Selector(operand, depth: depth + 1)))
            default:
                guard !key.hasPrefix("$") else { throw .badRequest("selector operator \(key) is not supported here") }
                parts.append(.field(key.split(separator: ".", omittingEmptySubsequences: false).map(String.init),
                                    try Self.condition(operand, depth: depth + 1)))
            }
        }
        self = parts.count == 1 ? parts[0] : .all(parts)
    }

    private static func condition(_ operand: JSON, depth: Int) throws(GatewayError) -> Condition {
        guard depth < maximumDepth else { throw .badRequest("selector nested deeper than \(maximumDepth)") }
        guard let members = operand.objectMembers, let first = members.first?.0, first.hasPrefix("$") else { return .eq(operand) }
        var conditions: [Condition] = []
        for (op, value) in members {
            switch op {
            case "$eq": conditions.append(.eq(value))
            case "$ne": conditions.append(.ne(value))
            case "$gt": conditions.append(.gt(value))
            case "$gte": conditions.append(.gte(value))
            case "$lt": conditions.append(.lt(value))
            case "$lte": conditions.append(.lte(value))
            case "$exists":
                guard case let .bool(flag) = value else { throw .badRequest("$exists takes a boolean") }
                conditions.append(.exists(flag))
            case "$in", "$nin":
                guard let list = value.arrayValue else { throw .badRequest("\(op) takes an array") }
                conditions.append(op == "$in" ? .inList(list) : .notIn(list))
            case "$type":
                guard let name = value.stringValue else { throw .badRequest("$type takes a string") }
                conditions.append(.type(name))
            case "$size":
                guard let n = value.integerValue else { throw .badRequest("$size takes an integer") }
                conditions.append(.size(n))
            case "$not": conditions.append(.not(try condition(value, depth: depth + 1)))
            default: throw .badRequest("selector operator \(op) is not supported here")
            }
        }
        return conditions.count == 1 ? conditions[0] : .and(conditions)
    }

    /// True when the document (its body, with `_id` and `_rev` added) matches.
    func matches(_ body: JSON, id: String, rev: String) -> Bool {
        var members = body.objectMembers ?? []
        members.insert(("_id", .string(id)), at: 0)
        members.insert(("_rev", .string(rev)), at: 1)
        return matches(.object(members))
    }

    private func matches(_ doc: JSON) -> Bool {
        switch self {
        case let .all(subs): return subs.allSatisfy { $0.matches(doc) }
        case let .any(subs): return subs.contains { $0.matches(doc) }
        case let .none(subs): return !subs.contains { $0.matches(doc) }
        case let .not(sub): return !sub.matches(doc)
        case let .field(path, condition):
            var value: JSON? = doc
            for key in path { value = value?[key] }
            return Self.test(condition, value)
        }
    }

    private static func test(_ condition: Condition, _ value: JSON?) -> Bool {
        switch condition {
        case let .exists(flag): return (value != nil) == flag
        case let .not(inner): return value != nil && !test(inner, value)
        case let .and(list): return list.allSatisfy { test($0, value) }
        default: break
        }
        guard let value else { return false }
        switch condition {
        case let .eq(operand): return compare(value, operand) == 0
        case let .ne(operand): return compare(value, operand) != 0
        case let .gt(operand): return compare(value, operand) > 0
        case let .gte(operand): return compare(value, operand) >= 0
        case let .lt(operand): return compare(value, operand) < 0
        case let .lte(operand): return compare(value, operand) <= 0
        case let .inList(list): return list.contains { compare(value, $0) == 0 }
        case let .notIn(list): return !list.contains { compare(value, $0) == 0 }
        case let .type(name): return typeName(value) == name
        case let .size(n): return value.arrayValue?.count == n
        default: return false
        }
    }

    private static func typeName(_ value: JSON) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private static func rank(_ value: JSON) -> Int {
        switch value {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case .array: return 5
        case .object: return 6
        }
    }

    /// CouchDB's collation order of JSON values (code-point order for strings).
    static func compare(_ a: JSON, _ b: JSON) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case let (.number(x), .number(y)):
            let (dx, dy) = (Double(x) ?? 0, Double(y) ?? 0)
            return dx < dy ? -1 : dx > dy ? 1 : 0
        case let (.string(x), .string(y)):
            return x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars) ? -1 : x == y ? 0 : 1
        case let (.array(x), .array(y)):
            for (u, v) in zip(x, y) {
                let c = compare(u, v)
                if c != 0 { return c }
            }
            return x.count < y.count ? -1 : x.count > y.count ? 1 : 0
        case let (.object(x), .object(y)):
            for (u, v) in zip(x, y) {
                if u.0 != v.0 { return u.0.unicodeScalars.lexicographicallyPrecedes(v.0.unicodeScalars) ? -1 : 1 }
                let c = compare(u.1, v.1)
                if c != 0 { return c }
            }
            return x.count < y.count ? -1 : x.count > y.count ? 1 : 0
        default: return 0
        }
    }
}
