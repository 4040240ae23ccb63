"""`nmc worker`: stateless workers that claim tasks and do their side effects.

loop.py runs one claim loop per task kind; one small module per kind (verzenden, receipt,
navraag, vaststellen, controle, ongeldig) maps outbound results to the outcome words the SQL
functions take. Every lifecycle rule stays in SQL.
"""
