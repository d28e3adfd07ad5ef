// Package mech owns dpal's noise: exact samplers (Canonne, Kamath, Steinke
// 2020) and the mechanisms built on them. Every mechanism validates its
// parameters at construction and reports its Cost for the ledger.
package mech
