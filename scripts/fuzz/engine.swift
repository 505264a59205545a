// libFuzzer target for the table engine, structure-aware: the input is not parsed but read as a stream of random
// choices (one byte each), from which the property tests' generators (Tests/TableModelTests/RandomTables.swift)
// build a table and intents that are mostly valid, so mutations reach deep into resolving, rebasing and laying out
// batches, where raw messages rarely get (built by scripts/fuzz.py). Each input is one of two programs:
// - intents, fresh and stale, committed by a server's engine under open rules, `withinSection` with
//   `reserveLastRow`, or limits lowered below the table's content: every resolution commits, a replica that
//   applies its batch equals the engine's table, rules and limits hold, a valid batch applies as the naive
//   reference does, and the snapshot plus the batches read back from their JSON (as a restart reads the log)
//   rebuild the same table;
// - clients predicting their intents (with undo and redo) while the server's answers arrive in any order: once
//   all is answered, every client's prediction and confirmed table is the server's.
// Nothing may trap: the engine refuses with a `TableError` or commits.
import TableModel

/// Random choices read from the fuzzer's input, one byte each (mixed, so that every bit of the number depends on
/// it and one mutated byte changes one choice). Once the input runs out every number is the same, so each input is
/// a finite program; not zero, which the standard library's unbiased ranges reject forever, but 2⁶³ − 1, which
/// they take (the middle of a range).
struct InputGenerator: RandomNumberGenerator {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset = 0

    var isExhausted: Bool { offset >= bytes.count }

    mutating func next() -> UInt64 {
        guard offset < bytes.count else { return UInt64.max >> 1 }
        defer { offset += 1 }
        var z = UInt64(bytes[offset]) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func commitIntents(using input: inout InputGenerator) {
    var table = RandomTables.table(using: &input)
    var limits: TableRules?
    switch Int.random(in: 0..<4, using: &input) {
    case 0: break
    case 1: table.rules = TableRules(moves: .withinSection, reserveLastRow: true)
    case 2: table.rules = TableRules(moves: .withinSection)
    default:
        limits = TableRules(
            maxSections: Int.random(in: 1...3, using: &input), maxRowsPerSection: Int.random(in: 1...3, using: &input),
            maxValueBytes: Int.random(in: 1...8, using: &input))
    }
    var engine = TableEngine(table: table, historyLimit: Int.random(in: 1...8, using: &input))
    if let limits { engine.setRules(limits) }
    let snapshot = engine.table
    var committed: [Batch] = []
    while !input.isExhausted, committed.count < 64 {
        let current = engine.table
        let intent: Intent
        switch Int.random(in: 0..<3, using: &input) {
        case 0: intent = RandomTables.intent(for: current, using: &input)
        case 1: intent = RandomTables.clientIntent(for: current, using: &input)
        default:
            let batch = RandomTables.validBatch(for: current, using: &input)
            var applied = current
            do { try applied.apply(batch) } catch { failure("a valid batch was refused: \(error) for \(batch)") }
            check(applied.sections == RandomTables.reference(current, batch), "a batch applied unlike UIKit: \(batch)")
            intent = .batch(RandomTables.clientBatch(batch, current, using: &input))
        }
        let base = UInt64.random(in: engine.oldestBase...current.version, using: &input)
        guard let resolution = try? engine.resolve(intent, base: base) else { continue }
        do { try engine.commit(resolution) } catch { failure("a resolution did not commit: \(error) for \(intent)") }
        committed.append(resolution.batch)
        var replica = current
        do { try replica.apply(resolution.batch) } catch { failure("a replica refused \(resolution.batch): \(error)") }
        check(replica == engine.table, "a replica differs after \(intent) at \(base)")
        if let broken = RandomTables.brokenRule(
            before: current, after: engine.table, batch: resolution.batch, limits: limits)
        {
            failure("\(broken) after \(intent) at \(base)")
        }
    }
    let batches = committed.map { batch in
        do { return try Batch(json: JSONValue(parsing: batch.jsonBytes)) } catch {
            failure("a committed batch does not read back: \(error) in \(batch)")
        }
    }
    check(batches == committed, "a committed batch reads back changed")
    let rebuilt = try? TableEngine(snapshot: snapshot, replaying: batches)
    check(rebuilt?.table == engine.table, "the snapshot and the log rebuild another table")
}

func convergeClients(using input: inout InputGenerator) {
    var table = RandomTables.table(using: &input)
    if Bool.random(using: &input) { table.rules.moves = .withinSection }
    if Bool.random(using: &input) { table.rules.maxRowsPerSection = 4 }
    var harness = OptimisticHarness(table: table, clients: 3)
    do {
        for _ in 0..<64 where !input.isExhausted { try harness.randomStep(using: &input) }
        try harness.settle()
    } catch {
        failure("a client refused what the server sent: \(error)")
    }
    for client in harness.clients {
        check(client.pendingCount == 0, "a client still has intents pending")
        check(client.predicted == harness.server.table, "a client's prediction is not the server's table")
        check(client.confirmed.table == harness.server.table, "a client's confirmed table is not the server's")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var input = InputGenerator(bytes: UnsafeBufferPointer(start: data, count: count))
    if Bool.random(using: &input) { commitIntents(using: &input) } else { convergeClients(using: &input) }
    return 0
}
