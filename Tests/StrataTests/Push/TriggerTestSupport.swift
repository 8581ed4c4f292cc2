@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Helpers of the trigger tests.
enum TriggerCheck {
    /// What an expression does on some values: holds, does not hold (evaluated without an error:
    /// its negation holds), or fails (neither it nor its negation holds).
    enum Outcome: Hashable, CustomStringConvertible {
        case holds, doesNotHold, fails

        var description: String {
            switch self {
            case .holds: return "holds"
            case .doesNotHold: return "does not hold"
            case .fails: return "fails"
            }
        }
    }

    static func outcome(_ expression: String, fields: [String], values: [String]) throws -> Outcome {
        let trigger = try PushTrigger(expression, fields: fields)
        if trigger.evaluate(values) { return .holds }
        let negated = try PushTrigger("!(" + expression + ")", fields: fields)
        return negated.evaluate(values) ? .doesNotHold : .fails
    }

    /// The character position and message of the error compiling `expression`, or nil if it
    /// compiles. Any other error than `.invalidArgument` with a position is reported as position 0.
    static func error(_ expression: String, fields: [String]) -> (position: Int, message: String)? {
        do {
            _ = try PushTrigger(expression, fields: fields)
            return nil
        } catch let StrataError.invalidArgument(_, message) {
            let prefix = "trigger expression at character "
            guard message.hasPrefix(prefix) else { return (0, message) }
            let rest = message.dropFirst(prefix.count)
            let digits = rest.prefix { $0.isNumber }
            return (Int(digits) ?? 0, message)
        } catch {
            return (0, "\(error)")
        }
    }
}
