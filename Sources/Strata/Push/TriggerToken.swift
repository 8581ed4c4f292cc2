@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The operators and separators of the language (Java's, the supported ones).
enum TriggerPunctuation: Sendable, Equatable {
    case leftParen, rightParen, dot, comma, question, colon
    case not, star, slash, percent, plus, minus
    case less, lessEqual, greater, greaterEqual, equal, notEqual, and, or

    var text: String {
        switch self {
        case .leftParen: return "("
        case .rightParen: return ")"
        case .dot: return "."
        case .comma: return ","
        case .question: return "?"
        case .colon: return ":"
        case .not: return "!"
        case .star: return "*"
        case .slash: return "/"
        case .percent: return "%"
        case .plus: return "+"
        case .minus: return "-"
        case .less: return "<"
        case .lessEqual: return "<="
        case .greater: return ">"
        case .greaterEqual: return ">="
        case .equal: return "=="
        case .notEqual: return "!="
        case .and: return "&&"
        case .or: return "||"
        }
    }
}

/// One token of a trigger expression: its kind and the UTF-8 byte range it covers.
struct TriggerToken: Sendable {
    enum Kind: Sendable, Equatable {
        case literal(TriggerConstant)
        /// `2147483648` or `9223372036854775808L`, legal only right after a unary minus (Java's
        /// rule); carries the wrapped value (the type's minimum), which the minus leaves as it is.
        case minimumMagnitude(TriggerConstant)
        /// `${name}` or `$[n]`, resolved to the 0-based index of the field.
        case field(Int)
        case identifier(String)
        case punctuation(TriggerPunctuation)
        case end
    }

    let kind: Kind
    let range: Range<Int>
}
