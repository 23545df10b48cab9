import Foundation

/// Dictionaries are what a fetch with ``NSFetchRequestResultType/dictionaryResultType``
/// returns (`NSFetchRequest<NSDictionary>`).
extension NSDictionary: NSFetchRequestResult {}
