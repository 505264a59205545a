// libFuzzer target for one client message, as the server takes it: `ClientMessage.decode`, then, for an intent, the
// table engine (Sources/TableModel, Sources/TablecastProtocol; built by scripts/fuzz.py). Checked on every input:
// - decoding never traps (its refusals are typed `ProtocolError`s);
// - the direct decoder of row intents agrees with the general one wherever it answers;
// - an intent the engine resolves, on a table with history (so stale bases are rebased) under open and under strict
//   rules, commits; its update encodes the same through the three encoders, and decoded as a client decodes it,
//   brings a replica of the table to the server's table; the new table's snapshot reads back as it is.
import TableModel
import TablecastProtocol

func message(_ text: String) -> ClientMessage {
    do { return try ClientMessage.decode(Array(text.utf8)) } catch { failure("\(error) in \(text)") }
}

/// A table of four sections (one empty, one row that may not move) with four committed batches of history.
func engine(rules: String) -> TableEngine {
    let create = message(
        #"{"type":"createTable","table":"t","rules":"# + rules
            + #","sections":[{"header":"A","footer":"a","rows":[{"value":"a0"},{"value":{"n":1,"tags":["x"]}},"#
            + #"{"value":"a2","movable":false},{"value":3}]},{"header":"B","rows":[{"value":"b0"},{"value":null}]},"#
            + #"{"rows":[]},{"header":"D","rows":[{"value":"d0"},{"value":"d1"},{"value":"d2"}]}]}"#)
    guard case .createTable(_, let sections, let patch) = create.body else { failure("not a createTable") }
    var engine = TableEngine(
        table: Table(contents: sections, rules: patch.applied(to: TableRules())), historyLimit: 8)
    for text in [
        #"{"type":"insert","table":"t","at":[0,1],"value":"h1"}"#,
        #"{"type":"move","table":"t","from":[3,0],"to":[1,1]}"#,
        #"{"type":"delete","table":"t","at":[0,0]}"#,
        #"{"type":"batch","table":"t","insertSections":[{"at":1,"header":"N","rows":[{"value":"n0"}]}],"#
            + #""reloadRows":[{"at":[0,0],"value":"r"}]}"#,
    ] {
        guard case .intent(_, let base, let intent) = message(text).body else { failure("not an intent: \(text)") }
        do { try engine.commit(try engine.resolve(intent, base: base)) } catch { failure("\(error) for \(text)") }
    }
    return engine
}

let engines = [
    engine(rules: "{}"),
    engine(
        rules: #"{"moves":"withinSection","maxSections":6,"maxRowsPerSection":6,"maxValueBytes":40,"#
            + #""reserveLastRow":true}"#),
]
let limits = ProtocolLimits(maxBatchEntries: 50)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    let decoded = try? ClientMessage.decode(bytes, limits: limits)
    if let direct = ClientMessage.decodeRowIntent(bytes, limits: limits) {
        let general = try? ClientMessage.decode(JSONValue(parsing: bytes), limits: limits)
        check(direct == general, "the direct decoder read \(direct), the general one \(String(describing: general))")
    }
    guard let decoded, case .intent(_, let base, let intent) = decoded.body else { return 0 }
    for engine in engines {
        guard let resolution = try? engine.resolve(intent, base: base) else { continue }
        var committed = engine
        do { try committed.commit(resolution) } catch { failure("a resolution did not commit: \(error)") }
        let update = ServerMessage.Update(
            table: "t", version: resolution.version, originClient: "c", originRef: decoded.ref,
            batch: resolution.batch)
        let general = ServerMessage.update(update).json.jsonBytes
        for direct in [update.encoded, update.encoded(batchJSON: resolution.batch.jsonBytes)] {
            check(
                (try? JSONValue(parsing: direct)) == (try? JSONValue(parsing: general)),
                "the encoders disagree: \(String(decoding: direct, as: UTF8.self))")
        }
        guard case .update(let received)? = try? ServerMessage.decode(general) else {
            failure("the update does not decode: \(String(decoding: general, as: UTF8.self))")
        }
        var replica = engine.table
        do { try replica.apply(received.batch) } catch { failure("a replica refused the update: \(error)") }
        check(replica.sections == committed.table.sections, "the replica differs from the server's table")
        let snapshot = try? Table(json: committed.table.json)
        check(snapshot?.sections == committed.table.sections, "the snapshot does not read back")
    }
    return 0
}
