// Package sketch owns the streaming summaries of a query log that the
// k-anonymity pipeline (package kanon; Feyisetan et al. 2019, "Efficient
// sub-sampling" and "Estimating k-anonymity using query frequency") keeps on
// the trusted side: a HyperLogLog distinct counter (Flajolet et al. 2007,
// through github.com/axiomhq/hyperloglog) and a Count-Mean-Min frequency
// sketch with conservative update (Cormode & Muthukrishnan 2005; Goyal,
// Daumé & Cormode 2012; Deng & Rafiei 2007), written here.
//
// Sketches are sensitive: raw HyperLogLog registers and sketch counters
// reveal whether a given record is present (Desfontaines, Lochbihler &
// Basin 2019), so nothing in this package is ever released. Only sets
// derived through the rule in Threshold (and charged to the ledger by
// package kanon) leave.
package sketch
