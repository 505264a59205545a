import TableModel
import TablecastProtocol
import TablecastTesting
import XCTest

/// Mutated and truncated messages are refused with a ProtocolError, never a crash or another error type.
final class ClientMessageFuzzTests: XCTestCase {
    private static let corpus = [
        #"{"type":"hello","client":"c1","name":"Ana","token":"t","ref":"h"}"#,
        #"{"type":"createTable","table":"g","sections":[{"header":"F","rows":[{"value":"fig","movable":false}]}],"rules":{"moves":"withinSection","maxSections":3}}"#,
        #"{"type":"subscribe","table":"t","since":41,"epoch":"e","ref":"s"}"#,
        #"{"type":"insert","table":"t","base":3,"at":[0,2],"value":{"n":[1,2,{"x":null}]},"ref":"i"}"#,
        #"{"type":"move","table":"t","from":[0,0],"to":[1,3],"row":"r4","ref":"m"}"#,
        #"{"type":"editSection","table":"t","at":0,"header":null,"footer":"f","section":"s1"}"#,
        #"{"type":"batch","table":"t","base":7,"ref":"b","deleteSections":[{"at":2}],"insertSections":[{"at":0,"rows":[{"value":1}]}],"reloadSections":[{"at":1,"header":"R"}],"moveSections":[{"from":0,"to":3}],"deleteRows":[{"at":[1,4],"row":"r1"}],"insertRows":[{"at":[1,0],"value":"A"}],"reloadRows":[{"at":[1,2],"value":"D"}],"moveRows":[{"from":[1,3],"to":[1,0]}]}"#,
        #"{"type":"beginEditingRow","table":"t","row":"r1"}"#,
        #"{"type":"patch","table":"t","base":2,"at":[0,1],"row":"r3","patch":{"done":true,"tags":{"x":null}}}"#,
        #"{"type":"batch","table":"t","deleteRows":[{"at":[0,0]}],"patchRows":[{"at":[0,1],"patch":{"n":1}},{"at":[0,2],"patch":[2]}]}"#,
    ]

    private func randomValue(_ depth: Int, _ g: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2: return .number([-1, 0, 1.5, 2, 1e300, 9_007_199_254_740_994].randomElement(using: &g)!)
        case 3: return .string(["", "t", "[0,0]", String(repeating: "x", count: 70)].randomElement(using: &g)!)
        case 4: return .number(Double(Int.random(in: 0...5, using: &g)))
        case 5: return .array((0..<Int.random(in: 0...3, using: &g)).map { _ in randomValue(depth + 1, &g) })
        default:
            let keys = ["at", "value", "table", "rows", "from", "to", "type", "ref", "header"]
            return .object(
                Dictionary(
                    (0..<Int.random(in: 0...3, using: &g)).map { _ in
                        (keys.randomElement(using: &g)!, randomValue(depth + 1, &g))
                    },
                    uniquingKeysWith: { a, _ in a }))
        }
    }

    /// Replaces one randomly chosen value somewhere inside `value`, or removes a member.
    private func mutate(_ value: JSONValue, _ g: inout SeededGenerator) -> JSONValue {
        switch value {
        case .object(var members) where !members.isEmpty && Bool.random(using: &g):
            let key = members.keys.sorted().randomElement(using: &g)!
            switch Int.random(in: 0..<3, using: &g) {
            case 0: members[key] = nil
            case 1: members[key] = randomValue(0, &g)
            default: members[key] = mutate(members[key]!, &g)
            }
            return .object(members)
        case .array(var elements) where !elements.isEmpty && Bool.random(using: &g):
            let index = Int.random(in: elements.indices, using: &g)
            elements[index] = mutate(elements[index], &g)
            return .array(elements)
        default:
            return randomValue(0, &g)
        }
    }

    func testMutatedMessagesAreRefusedCleanly() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var g = SeededGenerator(seed: seed)
        for _ in 0..<20_000 {
            let original = try JSONValue(parsing: ClientMessageFuzzTests.corpus.randomElement(using: &g)!)
            var mutated = original
            for _ in 0..<Int.random(in: 1...3, using: &g) { mutated = mutate(mutated, &g) }
            do {
                _ = try ClientMessage.decode(mutated.jsonBytes, limits: ProtocolLimits(maxBatchEntries: 5))
            } catch {
                XCTAssertFalse(error.message.isEmpty, "seed \(seed): empty message for \(mutated.jsonText)")
            }
        }
    }

    func testTruncatedBytesAreRefusedCleanly() {
        for text in ClientMessageFuzzTests.corpus {
            let bytes = Array(text.utf8)
            for length in 0..<bytes.count {
                XCTAssertThrowsError(try ClientMessage.decode(Array(bytes[..<length]))) { error in
                    XCTAssertEqual((error as? ProtocolError)?.code, .badRequest, "\(text.prefix(length))")
                }
            }
        }
    }

    /// Decoding the bytes (whose top level is read as a list of members) and decoding the parsed tree agree on
    /// every message, error and path, for byte-level mutations that break the syntax as well as the shape.
    func testBytesAndTheParsedTreeDecodeAlike() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var g = SeededGenerator(seed: seed)
        let alphabet = Array(#"{}[]":,\ 0123456789-.etrufalsn"#.utf8) + Array("ref".utf8) + [0x0A, 0xC3, 0xA9]
        func outcome(_ decode: () throws(ProtocolError) -> ClientMessage) -> Result<ClientMessage, ProtocolError> {
            do { return .success(try decode()) } catch { return .failure(error) }
        }
        for _ in 0..<20_000 {
            var bytes = Array(ClientMessageFuzzTests.corpus.randomElement(using: &g)!.utf8)
            bytes.mutateRandomly(edits: 1...2, alphabet: alphabet, using: &g)
            let limits = ProtocolLimits(maxBatchEntries: 5)
            let direct = outcome { () throws(ProtocolError) in try ClientMessage.decode(bytes, limits: limits) }
            let viaTree = outcome { () throws(ProtocolError) in
                switch Result(catching: { () throws(JSONParseError) in try JSONValue(parsing: bytes) }) {
                case .success(let tree): return try ClientMessage.decode(tree, limits: limits)
                case .failure(let error): throw ProtocolError(.badRequest, error.description)
                }
            }
            XCTAssertEqual(direct, viaTree, "seed \(seed): \(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// Row intents as clients write them, and as they may: every member, reordered, spaced, escaped, repeated.
    private static let rowIntents = [
        #"{"type":"edit","table":"groceries","base":41,"ref":"w3.17","at":[0,5],"row":"r42","value":{"item":"milk","qty":2}}"#,
        #"{"type":"edit","table":"t","at":[0,1],"value":[1,{"a":"b","c":null,"d":true}],"editable":false,"movable":true,"editingStyle":"none"}"#,
        #" { "value" : 2.5e0 , "at" : [ 1 , 0.0 ] , "type" : "edit" , "table" : "a.b-c_d" }"#,
        #"{"type":"insert","table":"groceries","base":41,"ref":"w3.18","at":[1,0],"value":"figs"}"#,
        #"{"type":"insert","table":"t","at":[0,0],"value":null,"editable":true,"movable":false,"editingStyle":"insert","ref":"éé\u00e9"}"#,
        #"{"type":"delete","table":"t","at":[3,4],"row":"r9","base":0}"#,
        #"{"type":"move","table":"t","from":[0,0],"to":[1,3],"row":"r4","ref":"m"}"#,
        #"{"type":"patch","table":"t","base":2,"at":[0,1],"row":"r3","patch":{"done":true,"tags":{"x":null}}}"#,
        #"{"type":"batch","table":"t","base":7,"ref":"b","deleteRows":[{"at":[1,4],"row":"r1"}],"insertRows":[{"at":[1,0],"value":"A","editingStyle":"delete"}],"reloadRows":[{"at":[1,2],"value":"D","movable":false}],"moveRows":[{"from":[1,3],"to":[1,0],"row":"r2"}],"patchRows":[{"at":[0,1],"patch":{"n":1}}]}"#,
        #"{"type":"batch","table":"t","deleteRows":[],"insertRows":[{"at":[0,0],"value":{"a":1,"b":2,"c":3}}]}"#,
        #"{"t\u0079pe":"edit","table":"t","at":[0,0],"value":1}"#,
        #"{"type":"edit","type":"edit","table":"t","at":[0,0],"value":1}"#,
        #"{"type":"edit","table":"t","at":[0,0,0],"value":1,"ref":"\r\n"}"#,
        #"{"type":"delete","table":"t","at":[-0,18014398509481984],"row":null}"#,
        #"{"type":"insertSection","table":"t","at":0}"#,
    ]

    /// The direct reader of row intents takes a subset of what the general decoder accepts and decodes it alike:
    /// on every prefix and on random mutations of the row intents, whatever it takes equals the result of decoding
    /// the parsed tree (a refusal from it is left to the general decoder, whose errors the other tests compare).
    func testTheDirectRowIntentReaderAgreesWithTheTreeDecoder() {
        let limits = ProtocolLimits(maxBatchEntries: 5, maxRefLength: 5)
        assertDirectReaderAgrees(
            samples: Self.rowIntents, taking: 10, of: "row intents", keyLetters: "refatvaluerowmove",
            direct: { ClientMessage.decodeRowIntent($0, limits: limits) },
            viaTree: { try ClientMessage.decode(JSONValue(parsing: $0), limits: limits) })
    }

    /// A limit the direct reader meets is left to the general decoder, which names it.
    func testLimitsOnRowIntentsAreStillEnforced() {
        let limits = ProtocolLimits(maxBatchEntries: 2, maxRefLength: 3)
        let tooLong = Array(#"{"type":"edit","table":"t","at":[0,0],"value":1,"ref":"abcd"}"#.utf8)
        XCTAssertNil(ClientMessage.decodeRowIntent(tooLong, limits: limits))
        XCTAssertThrowsError(try ClientMessage.decode(tooLong, limits: limits)) { error in
            XCTAssertEqual((error as? ProtocolError)?.message, "field 'ref' must be at most 3 characters")
        }
        let crlf = Array(#"{"type":"edit","table":"t","at":[0,0],"value":1,"ref":"ab\r\n"}"#.utf8)
        XCTAssertEqual(try ClientMessage.decode(crlf, limits: limits).ref, "ab\r\n", "three characters, four bytes")
        let batch = Array(#"{"type":"batch","table":"t","deleteRows":[{"at":[0,0]},{"at":[0,1]},{"at":[0,2]}]}"#.utf8)
        XCTAssertNil(ClientMessage.decodeRowIntent(batch, limits: limits))
        XCTAssertThrowsError(try ClientMessage.decode(batch, limits: limits)) { error in
            XCTAssertEqual((error as? ProtocolError)?.code, .limitExceeded)
        }
    }
}
