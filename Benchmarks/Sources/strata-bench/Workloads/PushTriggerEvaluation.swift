import Strata

/// `push-trigger`: evaluations of the push trigger `Double.parseDouble(${x}) > 500.0` (the
/// example of Lightstreamer's MPN documentation) over `--count` pre-made random values with two
/// decimals (`512.25`), one thread; each timed operation evaluates `--batch` of them in turn.
/// Every result is checked against the standard library's parse. Strata only (the peers have no
/// trigger language).
struct PushTriggerEvaluation: Workload {
    let name = "push-trigger"
    let summary = "evaluate the trigger Double.parseDouble(${x}) > 500.0 on random prices"
    let defaultCount = 1_000_000
    let quickCount = 100_000
    let defaultOperations = 20_000
    let quickOperations = 2_000

    func operationUnit(_ run: RunContext) -> String { "\(run.config.batch) trigger evaluations (items = evaluations)" }

    func unavailability(on engine: EngineKind) -> String? {
        engine == .strata ? nil : "push triggers are Strata's own"
    }

    func run(_ run: RunContext, recorder: Recorder) throws -> RunOutcome {
        let trigger = try PushTrigger("Double.parseDouble(${x}) > 500.0", fields: ["x"])
        var rng = XorShift64Star(seed: run.config.seed)
        // One field-value array per update, as the engine will pass them.
        var updates: [[String]] = []
        var expected: [Bool] = []
        updates.reserveCapacity(run.count)
        expected.reserveCapacity(run.count)
        for _ in 0..<run.count {
            let cents = rng.below(100_000)
            let text = "\(cents / 100).\(cents % 100 < 10 ? "0" : "")\(cents % 100)"
            updates.append([text])
            expected.append(cents > 50_000)
        }
        let batch = run.config.batch
        var next = 0
        for _ in 0..<run.operations {
            let start = next
            var holds = 0
            _ = recorder.measureWork {
                var i = start
                for _ in 0..<batch {
                    if trigger.evaluate(updates[i]) { holds &+= 1 }
                    i += 1
                    if i == updates.count { i = 0 }
                }
                return (batch, 0)
            }
            var wanted = 0
            var i = start
            for _ in 0..<batch {
                if expected[i] { wanted += 1 }
                i += 1
                if i == updates.count { i = 0 }
            }
            guard holds == wanted else {
                throw BenchError("the trigger held on \(holds) of \(batch) values from #\(start), expected \(wanted)")
            }
            next = i
        }
        return RunOutcome(records: run.count)
    }

    func tableNote(_ config: BenchConfig) -> String? { "one thread; values 0.00…999.99, two decimals; B/record is 0 (nothing stored)" }
}
