@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Parses the tokens of a trigger expression into ``TriggerNode``s, with Java's precedence and
/// associativity, by operator precedence over two explicit stacks (operands and pending operators)
/// — no recursion, so no input can exhaust the call stack.
///
/// Grammar (Java's, restricted to the language):
///
///     expression  := or [ '?' expression ':' expression ]      (right-associative)
///     or          := and { '||' and }
///     and         := equality { '&&' equality }
///     equality    := relational { ('==' | '!=') relational }
///     relational  := additive { ('<' | '<=' | '>' | '>=') additive }
///     additive    := multiplicative { ('+' | '-') multiplicative }
///     multiplicative := unary { ('*' | '/' | '%') unary }
///     unary       := ('!' | '-' | '+') unary | postfix
///     postfix     := primary { '.' method '(' [ arguments ] ')' }
///     primary     := literal | '${' name '}' | '$[' n ']' | '(' expression ')'
///                  | [ 'java' '.' 'lang' '.' ] Class '.' function '(' arguments ')'
///
/// Nesting — parentheses, argument lists, `?:` and prefix operators open at once — is limited to
/// ``maximumDepth`` levels.
struct TriggerParser {
    let source: TriggerSource
    /// The deepest nesting accepted.
    static let maximumDepth = 64

    /// A pending entry of the operator stack.
    private enum Pending {
        case op(TriggerOperator, offset: Int)
        case paren(offset: Int)
        /// A call whose `(` is open; `arguments` counts the completed ones (a method's receiver
        /// included). `offset` is where the name starts.
        case call(TriggerFunction, offset: Int, arguments: Int)
        /// A `?` waiting for its `:`.
        case question(offset: Int)
        /// A `?` whose `:` came: the conditional waits for its last operand.
        case colon(offset: Int)
    }

    private var tokens: [TriggerToken] = []
    private var nodes: [TriggerNode] = []
    private var operands: [Int] = []
    private var pending: [Pending] = []
    private var depth = 0

    init(source: TriggerSource) {
        self.source = source
    }

    /// The nodes of `tokens` and the index of the root.
    mutating func parse(_ tokens: [TriggerToken]) throws(StrataError) -> (nodes: [TriggerNode], root: Int) {
        self.tokens = tokens
        var t = 0
        var expectOperand = true
        while true {
            let token = self.token(t)
            if expectOperand {
                switch token.kind {
                case .literal(let c):
                    operands.append(add(.constant(c), [], offset: token.range.lowerBound))
                    t += 1
                    expectOperand = false
                case .minimumMagnitude(let c):
                    guard t > 0, self.token(t - 1).kind == .punctuation(.minus), case .op(.negate, _)? = pending.last else {
                        throw source.error(at: token.range.lowerBound, "the number '\(source.excerpt(token.range))' is too large for "
                            + "\(c.type); only its negation, written with '-' right before it, is accepted")
                    }
                    operands.append(add(.constant(c), [], offset: token.range.lowerBound))
                    t += 1
                    expectOperand = false
                case .field(let index):
                    operands.append(add(.field(index), [], offset: token.range.lowerBound))
                    t += 1
                    expectOperand = false
                case .identifier(let name):
                    (t, expectOperand) = try identifier(name, at: t)
                case .punctuation(.leftParen):
                    try open(.paren(offset: token.range.lowerBound), at: token)
                    t += 1
                case .punctuation(.not):
                    try open(.op(.not, offset: token.range.lowerBound), at: token)
                    t += 1
                case .punctuation(.minus):
                    try open(.op(.negate, offset: token.range.lowerBound), at: token)
                    t += 1
                case .punctuation(.plus):
                    try open(.op(.plus, offset: token.range.lowerBound), at: token)
                    t += 1
                default:
                    throw source.error(at: token.range.lowerBound, "expected an operand (a field, a literal, a call, '(', '!' or '-'), found \(describe(token))")
                }
                continue
            }
            switch token.kind {
            case .punctuation(let p):
                if let op = TriggerOperator.binary(p) {
                    try reduce(above: op.precedence, conditionals: false)
                    pending.append(.op(op, offset: token.range.lowerBound))
                    t += 1
                    expectOperand = true
                    continue
                }
                switch p {
                case .dot:
                    (t, expectOperand) = try method(at: t)
                case .question:
                    try reduce(above: 0, conditionals: false)
                    try open(.question(offset: token.range.lowerBound), at: token)
                    t += 1
                    expectOperand = true
                case .colon:
                    try reduce(above: 0, conditionals: true)
                    guard case .question(let offset)? = pending.last else {
                        throw source.error(at: token.range.lowerBound, "unexpected ':' without a matching '?'")
                    }
                    pending[pending.count - 1] = .colon(offset: offset)
                    t += 1
                    expectOperand = true
                case .comma:
                    try reduce(above: 0, conditionals: true)
                    switch pending.last {
                    case .call(let f, let offset, let arguments)?:
                        pending[pending.count - 1] = .call(f, offset: offset, arguments: arguments + 1)
                    case .question(let offset)?:
                        throw source.error(at: token.range.lowerBound, "expected ':' of the '?' at character \(source.position(ofByte: offset)), found ','")
                    default:
                        throw source.error(at: token.range.lowerBound, "unexpected ',' outside the arguments of a call")
                    }
                    t += 1
                    expectOperand = true
                case .rightParen:
                    try reduce(above: 0, conditionals: true)
                    switch pending.last {
                    case .paren?:
                        pending.removeLast()
                        depth -= 1
                    case .call(let f, let offset, let arguments)?:
                        pending.removeLast()
                        depth -= 1
                        try call(f, offset: offset, arguments: arguments + 1, close: token)
                    case .question(let offset)?:
                        throw source.error(at: token.range.lowerBound, "expected ':' of the '?' at character \(source.position(ofByte: offset)), found ')'")
                    default:
                        throw source.error(at: token.range.lowerBound, "unexpected ')' without a matching '('")
                    }
                    t += 1
                    expectOperand = false
                default:
                    throw source.error(at: token.range.lowerBound, "expected an operator, found \(describe(token))")
                }
            case .end:
                try reduce(above: 0, conditionals: true)
                switch pending.last {
                case .paren(let offset)?:
                    throw source.error(at: token.range.lowerBound, "expected ')' closing the '(' at character \(source.position(ofByte: offset)), found the end")
                case .call(let f, let offset, _)?:
                    throw source.error(at: token.range.lowerBound, "expected ')' closing the arguments of \(f.name) at character \(source.position(ofByte: offset)), found the end")
                case .question(let offset)?:
                    throw source.error(at: token.range.lowerBound, "expected ':' of the '?' at character \(source.position(ofByte: offset)), found the end")
                default:
                    break
                }
                guard pending.isEmpty, operands.count == 1, let root = operands.first else {
                    throw source.error(at: token.range.lowerBound, "expected the end of a single expression")
                }
                return (nodes, root)
            default:
                throw source.error(at: token.range.lowerBound, "expected an operator or the end, found \(describe(token))")
            }
        }
    }

    // MARK: Tokens

    /// Token `t`, or the end past the last one.
    private func token(_ t: Int) -> TriggerToken {
        if t >= 0, t < tokens.count { return tokens[t] }
        return tokens.last ?? TriggerToken(kind: .end, range: source.bytes.count..<source.bytes.count)
    }

    private func describe(_ token: TriggerToken) -> String {
        token.kind == .end ? "the end" : "'\(source.excerpt(token.range))'"
    }

    private func isPunctuation(_ t: Int, _ p: TriggerPunctuation) -> Bool {
        token(t).kind == .punctuation(p)
    }

    // MARK: Operands

    /// An identifier in operand position: `true`, `false`, `null` or a static call
    /// `[java.lang.]Class.function(`. Returns the next token and whether an operand is expected.
    private mutating func identifier(_ name: String, at start: Int) throws(StrataError) -> (Int, Bool) {
        let offset = token(start).range.lowerBound
        switch name {
        case "true", "false":
            operands.append(add(.constant(.boolean(name == "true")), [], offset: offset))
            return (start + 1, false)
        case "null":
            operands.append(add(.constant(.null), [], offset: offset))
            return (start + 1, false)
        default:
            break
        }
        var t = start
        var className = name
        if name == "java" {
            guard isPunctuation(t + 1, .dot), token(t + 2).kind == .identifier("lang"), isPunctuation(t + 3, .dot),
                  case .identifier(let qualified) = token(t + 4).kind else {
                throw source.error(at: offset, "expected java.lang.Double, Float, Integer, Long, Boolean or Math")
            }
            t += 4
            className = qualified
        }
        guard let functions = TriggerFunction.functions(of: className) else {
            throw source.error(at: token(t).range.lowerBound, "unknown name '\(source.excerpt(token(t).range))'; expected a field "
                + "(${name} or $[n]), a literal, Double.parseDouble, Float.parseFloat, Integer.parseInt, Long.parseLong, "
                + "Boolean.parseBoolean, Math.abs, Math.min, Math.max, true, false or null")
        }
        guard isPunctuation(t + 1, .dot) else {
            throw source.error(at: token(t + 1).range.lowerBound, "expected '.' after \(className), found \(describe(token(t + 1)))")
        }
        guard case .identifier(let method) = token(t + 2).kind, let f = TriggerFunction.staticFunction(className, method) else {
            throw source.error(at: token(t + 2).range.lowerBound, "unknown function \(className).\(source.excerpt(token(t + 2).range)); "
                + "expected \(className).\(functions)")
        }
        guard isPunctuation(t + 3, .leftParen) else {
            throw source.error(at: token(t + 3).range.lowerBound, "expected '(' after \(f.name), found \(describe(token(t + 3)))")
        }
        return try openCall(f, offset: offset, arguments: 0, paren: t + 3)
    }

    /// `.method(` after an operand, the receiver.
    private mutating func method(at t: Int) throws(StrataError) -> (Int, Bool) {
        guard case .identifier(let name) = token(t + 1).kind else {
            throw source.error(at: token(t + 1).range.lowerBound, "expected a method name after '.', found \(describe(token(t + 1)))")
        }
        let offset = token(t + 1).range.lowerBound
        guard let f = TriggerFunction.method(name) else {
            throw source.error(at: offset, "unknown method '\(source.excerpt(token(t + 1).range))'; expected equals, "
                + "equalsIgnoreCase, startsWith, endsWith, contains, length or isEmpty")
        }
        guard isPunctuation(t + 2, .leftParen) else {
            throw source.error(at: token(t + 2).range.lowerBound, "expected '(' after \(f.name), found \(describe(token(t + 2)))")
        }
        return try openCall(f, offset: offset, arguments: 1, paren: t + 2)
    }

    /// Opens the call of `f` at the `(` of token `paren`: a call with no argument (`f()`, or a
    /// method's receiver only) closes at once; otherwise an operand follows.
    private mutating func openCall(_ f: TriggerFunction, offset: Int, arguments: Int, paren: Int) throws(StrataError) -> (Int, Bool) {
        try open(.call(f, offset: offset, arguments: arguments), at: token(paren))
        if isPunctuation(paren + 1, .rightParen) {
            pending.removeLast()
            depth -= 1
            try call(f, offset: offset, arguments: arguments, close: token(paren + 1))
            return (paren + 2, false)
        }
        return (paren + 1, true)
    }

    // MARK: Stacks

    /// Pushes an entry that nests (all but binary operators), within the depth limit.
    private mutating func open(_ entry: Pending, at token: TriggerToken) throws(StrataError) {
        guard depth < Self.maximumDepth else {
            throw source.error(at: token.range.lowerBound, "the expression nests deeper than \(Self.maximumDepth) levels "
                + "(parentheses, calls, '?:' and prefix operators)")
        }
        depth += 1
        pending.append(entry)
    }

    /// Applies the pending operators of precedence `above` or more (and the completed
    /// conditionals if `conditionals`), innermost first.
    private mutating func reduce(above precedence: Int, conditionals: Bool) throws(StrataError) {
        while let top = pending.last {
            switch top {
            case .op(let op, let offset) where op.precedence >= precedence:
                pending.removeLast()
                if op.isUnary {
                    depth -= 1
                    let operand = try popOperand(offset)
                    operands.append(unary(op, operand, offset: offset))
                } else {
                    let right = try popOperand(offset)
                    let left = try popOperand(offset)
                    operands.append(add(.binary(op), [left, right], offset: offset))
                }
            case .colon(let offset) where conditionals:
                pending.removeLast()
                depth -= 1
                let otherwise = try popOperand(offset)
                let then = try popOperand(offset)
                let condition = try popOperand(offset)
                operands.append(add(.conditional, [condition, then, otherwise], offset: offset))
            default:
                return
            }
        }
    }

    private mutating func popOperand(_ offset: Int) throws(StrataError) -> Int {
        guard let operand = operands.popLast() else {
            throw source.error(at: offset, "expected an operand")
        }
        return operand
    }

    /// A unary operator node; a minus before a numeric literal folds into the literal (so that
    /// `-2147483648` is an int and `x > -5.0` compares with a constant).
    private mutating func unary(_ op: TriggerOperator, _ operand: Int, offset: Int) -> Int {
        if op == .negate, case .constant(let c) = nodes[operand].kind {
            var folded: TriggerConstant? = nil
            switch c {
            case .int(let v): folded = .int(0 &- v)
            case .long(let v): folded = .long(0 &- v)
            case .float(let v): folded = .float(-v)
            case .double(let v): folded = .double(-v)
            default: break
            }
            if let folded {
                nodes[operand].kind = .constant(folded)
                nodes[operand].offset = offset
                return operand
            }
        }
        return add(.unary(op), [operand], offset: offset)
    }

    /// Completes a call with `arguments` arguments (the receiver of a method included).
    private mutating func call(_ f: TriggerFunction, offset: Int, arguments: Int, close: TriggerToken) throws(StrataError) {
        guard arguments == f.arity else {
            let (expected, found) = f.isMethod ? (f.arity - 1, arguments - 1) : (f.arity, arguments)
            throw source.error(at: offset, "\(f.name) takes \(expected) argument\(expected == 1 ? "" : "s"), found \(found)")
        }
        var children: [Int] = []
        for _ in 0..<arguments { children.append(try popOperand(offset)) }
        operands.append(add(.call(f), children.reversed(), offset: offset))
    }

    private mutating func add(_ kind: TriggerNode.Kind, _ children: [Int], offset: Int) -> Int {
        let c = (children.count > 0 ? children[0] : -1, children.count > 1 ? children[1] : -1, children.count > 2 ? children[2] : -1)
        nodes.append(TriggerNode(kind: kind, children: c, childCount: children.count, offset: offset))
        return nodes.count - 1
    }
}
