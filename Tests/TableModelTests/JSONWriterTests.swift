import TableModel
import TablecastTesting
import XCTest

final class JSONWriterTests: XCTestCase {
    func testCommasAndNesting() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.beginArray()
        writer.integer(1)
        writer.beginObject()
        writer.endObject()
        writer.beginArray()
        writer.endArray()
        writer.string("x\"y")
        writer.endArray()
        writer.key("b")
        writer.optionalString(nil)
        writer.key("c")
        writer.bool(false)
        writer.key("d")
        writer.value(["k": [1.5, "é"]])
        writer.endObject()
        XCTAssertEqual(
            String(decoding: writer.bytes, as: UTF8.self),
            #"{"a":[1,{},[],"x\"y"],"b":null,"c":false,"d":{"k":[1.5,"é"]}}"#)
    }

    func testMembersOfAnObjectWrittenEarlier() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.integer(1)
        writer.members(ofObject: Array(#"{}"#.utf8))
        writer.members(ofObject: JSONValue.object(["b": [true], "c": ["d": nil]]).jsonBytes)
        writer.endObject()
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"{"a":1,"b":[true],"c":{"d":null}}"#)
        var first = JSONWriter()
        first.beginObject()
        first.members(ofObject: Array(#"{"x":"y"}"#.utf8))
        first.key("z")
        first.bool(true)
        first.endObject()
        XCTAssertEqual(String(decoding: first.bytes, as: UTF8.self), #"{"x":"y","z":true}"#)
    }

    func testIntegersAtTheEdges() {
        for value: Int64 in [0, 7, 9, 10, -1, -10, 1_234_567_890, .max, .min + 1, .min] {
            var writer = JSONWriter()
            writer.integer(value)
            XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), String(value))
        }
        var writer = JSONWriter()
        writer.integer(UInt64(Int64.max))
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), String(Int64.max))
    }

    /// The direct batch writer is an optimization of `json.jsonBytes`: the bytes must be identical.
    func testBatchBytesEqualTheValuesText() {
        withSeed { generator in
            for _ in 0..<300 {
                let table = RandomTables.table(using: &generator)
                let batch = RandomTables.validBatch(for: table, using: &generator)
                XCTAssertEqual(batch.jsonBytes, batch.json.jsonBytes, batch.json.jsonText)
            }
        }
        let flags = Batch(
            insertSections: [
                .init(
                    at: 0,
                    section: Section(
                        id: "s1", header: "H\n", footer: nil,
                        rows: [Row(id: "r1", value: nil, editable: false, movable: false)]))
            ],
            reloadSections: [.init(at: 1, header: nil, footer: "f")],
            reloadRows: [.init(at: RowPath(section: 1, row: 0), value: [1, 2], editable: true, movable: false)])
        XCTAssertEqual(flags.jsonBytes, flags.json.jsonBytes, flags.json.jsonText)
    }
}
