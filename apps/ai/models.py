"""The vector store kept in our own database (LLM_INDEX_TEXT, LLM_STORE_EMBEDDINGS,
LLM_SEARCH_INDEX, LLM_SEARCH_EMBEDDINGS, LLM_GET_EMBEDDINGS).

One row per stored vector, addressed by Conductor's ``vectorDB`` / ``index`` /
``namespace`` / ``docId``. The embedding is a JSON list of floats; search is cosine
similarity computed in Python over the rows of one (vectorDB, index, namespace).
"""
from django.db import models


class VectorDocument(models.Model):
    vector_db = models.CharField(max_length=255)
    index = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    doc_id = models.CharField(max_length=255)
    parent_doc_id = models.CharField(max_length=255, blank=True, default="")
    text = models.TextField(blank=True, default="")
    embedding = models.JSONField()
    dimensions = models.IntegerField()
    metadata = models.JSONField(default=dict)
    updated_ms = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["vector_db", "index", "namespace", "doc_id"],
                                               name="ai_vector_document_key")]
        indexes = [models.Index(fields=["vector_db", "index", "namespace"], name="ai_vector_scope")]
