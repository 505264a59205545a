import Foundation

// PageEmbedder OUTPUT FILE...: writes a Swift file declaring `enum EmbeddedPage` with each file's bytes, by name (a
// FILE given as NAME=PATH is embedded under NAME, e.g. `schema/ack.json`).
// Base64 in string literals: the compiler takes a long string in no time, where an array literal of the same bytes
// takes minutes to type-check.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: PageEmbedder OUTPUT FILE...\n".utf8))
    exit(64)
}
var source = """
    import Foundation

    /// The browser page, embedded at build time by the EmbedPage plugin from web-client-protocol/client.
    enum EmbeddedPage {
        /// Each file's bytes, by name (`index.html`).
        static let files: [String: [UInt8]] = encoded.mapValues { Array(Data(base64Encoded: $0)!) }

        private static let encoded: [String: String] = [

    """
for argument in arguments.dropFirst() {
    let named = argument.split(separator: "=", maxSplits: 1).map(String.init)
    let url = URL(fileURLWithPath: named.last!)
    let contents = try Data(contentsOf: url)
    let name = named.count == 2 ? named[0] : url.lastPathComponent
    source += "        \"\(name)\": \"\(contents.base64EncodedString())\",\n"
}
source += arguments.count > 1 ? "    ]\n}\n" : "    :]\n}\n"
try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
